// Megatron-FSDP and Megatron's optimizer instances, against closed forms of
// their traffic and memory: Llama 3 8B (dense) and Mixtral 8x7B (experts
// whose sharding group inside an instance is one rank).
#include <cmath>

#include "ptsim/workload/step_workload.hpp"
#include "ptsim/simulate/kernel_inventory.hpp"
#include "simulate/llama3_8b_parameters.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

using test::llama3_8b::kBoundary;
using test::llama3_8b::kLayer;
using test::llama3_8b::kParameters;

// Llama 3 8B on 32 H100s under Megatron-FSDP sharding everything, four
// optimizer instances of eight ranks, `micro_batches` of 2 × 8192 tokens a rank.
config::StrategyInput llama(std::int64_t micro_batches, const char* outer) {
  config::StrategyInput st;
  st.gpus = 32;
  st.micro_batch_size = 2;
  st.global_batch_size = 2 * 32 * micro_batches;
  st.seq_length = 8192;
  st.recompute = "full";
  st.megatron_fsdp = true;
  st.optimizer_instances = 4;
  if (outer != nullptr) st.outer_dp_sharding_strategy = outer;
  return st;
}

report::StepResult run(const model::ModelSpec& m, const config::StrategyInput& st) {
  return test::simulate(m, test::shipped_hardware("h100-sxm5-80gb"), st).result;
}

double dp_bytes(const report::StepResult& r) { return static_cast<double>(r.communication.at("dp").bytes); }

}  // namespace

TEST_CASE("Hybrid-FSDP shards inside an instance every micro-batch and across instances once a step",
          "[simulate][megatron_fsdp]") {
  const auto m = test::shipped_model("llama3-8b");
  const auto one = run(m, llama(1, "optim"));
  // Inside the instance (8 ranks), every micro-batch: each layer's bf16
  // parameters gathered for its forward and again for its backward, its bf16
  // gradients reduce-scattered (2 bytes each: Megatron-FSDP's main gradients
  // are the compute weights' dtype); the embedding's and output layer's
  // gradients reduce-scattered. Across the instances, once: each layer's
  // 1/8 shard gathered before the first forward and its gradient shard
  // reduce-scattered in the last backward, the boundary's gradient shard too.
  const double inner = 32 * 3 * 2 * kLayer + 2 * kBoundary;
  const double outer = 32 * 2 * 2 * kLayer / 8 + 2 * kBoundary / 8;
  CHECK(dp_bytes(one) == Approx(inner + outer));
  CHECK((one.megatron_fsdp && one.optimizer_instances == 4 && one.outer_optimizer_sharding));
  // A second micro-batch adds the inner traffic alone.
  CHECK(dp_bytes(run(m, llama(2, "optim"))) - dp_bytes(one) == Approx(inner));
  // Memory: Adam's 12 bytes over all 32 ranks, bf16 weights and gradients
  // over the instance's 8: opt/(inner·outer) + (grads + weights)/inner.
  CHECK(static_cast<double>(one.memory.optimizer_bytes) == Approx(12 * std::ceil(kParameters / 32)));
  CHECK(static_cast<double>(one.memory.grads_bytes) == Approx(2 * std::ceil(kParameters / 8)));
  CHECK(static_cast<double>(one.memory.params_bytes) == Approx(2 * std::ceil(kParameters / 8)));
}

TEST_CASE("Megatron-FSDP's HSDP all-reduces each reduced shard across the instances in the last micro-batch",
          "[simulate][megatron_fsdp]") {
  const auto m = test::shipped_model("llama3-8b");
  const auto hsdp = run(m, llama(2, nullptr));  // outer no_shard, the default
  const double inner = 32 * 3 * 2 * kLayer + 2 * kBoundary;
  CHECK(dp_bytes(hsdp) == Approx(2 * inner + 2 * kParameters / 8));
  CHECK(static_cast<double>(hsdp.memory.optimizer_bytes) == Approx(12 * std::ceil(kParameters / 8)));
  // An instance is a node (8 GPUs), so the all-reduce across instances is
  // the only traffic on the NICs: four ranks, one a node, each sending
  // 2·(4 − 1)/4 of its shard's S = 2·P/8 bytes as a ring does. A NIC ten
  // times slower adds at least that traffic's time at the slower rate, less
  // its time at the shipped one (80%, for the ring's other schedules).
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  auto slow = hw;
  slow.nic.bandwidth_bytes_per_s /= 10;
  const auto slowed = test::simulate(m, slow, llama(2, nullptr)).result;
  const double sent = 1.5 * 2 * kParameters / 8;
  const double added = sent / slow.nic.bandwidth_bytes_per_s - sent / hw.nic.bandwidth_bytes_per_s;
  CHECK(slowed.communication.at("dp").time_s - hsdp.communication.at("dp").time_s > 0.8 * added);
  // Inside the node the instance's traffic is NVLink's: a slower NIC leaves
  // a run with one instance of 8 ranks (8 GPUs) as it was.
  config::StrategyInput node = llama(2, nullptr);
  node.gpus = 8;
  node.global_batch_size = 2 * 8 * 2;
  node.optimizer_instances.reset();
  CHECK(test::simulate(m, slow, node).result.step_time_s == Approx(run(m, node).step_time_s).epsilon(1e-9));
}

TEST_CASE("The distributed optimizer's instances reduce inside an instance then all-reduce the shard across",
          "[simulate][megatron_fsdp]") {
  const auto m = test::shipped_model("llama3-8b");
  config::StrategyInput st;
  st.gpus = 32;
  st.micro_batch_size = 2;
  st.global_batch_size = 64;
  st.seq_length = 8192;
  st.recompute = "full";
  st.distributed_optimizer = true;
  st.optimizer_instances = 2;
  const auto r = run(m, st);
  // fp32 gradients reduce-scattered over 16 ranks, the 1/16 shard
  // all-reduced across the 2 instances, bf16 parameters gathered over 16.
  CHECK(dp_bytes(r) == Approx(4 * kParameters + 4 * kParameters / 16 + 2 * kParameters));
  CHECK(static_cast<double>(r.memory.optimizer_bytes) == Approx(12 * std::ceil(kParameters / 16)));
  CHECK(static_cast<double>(r.memory.grads_bytes) == Approx(4 * kParameters));
}

TEST_CASE("Experts whose instance holds one copy move only across the instances under Hybrid-FSDP",
          "[simulate][megatron_fsdp]") {
  // Mixtral 8x7B on 32 H100s, EP 8: experts' data parallelism 4, two
  // instances, so an expert is sharded over 2 ranks inside one; the dense
  // parameters over 16. A layer's dense parameters: attention 4096·(4096 +
  // 1024 + 1024 + 4096), two norms, the router 4096·8; a rank's expert
  // (one of eight) 3·4096·14336. Embedding and output untied, 32,000 × 4096.
  const double dense = 4096.0 * (4096 + 1024 + 1024 + 4096) + 2 * 4096 + 4096 * 8;
  const double expert = 3.0 * 4096 * 14336;
  const double boundary = 2.0 * 32000 * 4096 + 4096;
  const auto m = test::shipped_model("mixtral-8x7b");
  config::StrategyInput st;
  st.gpus = 32;
  st.ep = 8;
  st.micro_batch_size = 1;
  st.global_batch_size = 32;
  st.recompute = "full";
  st.megatron_fsdp = true;
  st.optimizer_instances = 2;
  st.outer_dp_sharding_strategy = "optim";
  const auto r = run(m, st);
  // Dense: 3 inner collectives a layer at 2 bytes a parameter, the outer
  // gather and reduce-scatter of the 1/16 shard; the boundary's gradients.
  const double dense_bytes = 32 * (3 * 2 * dense + 2 * 2 * dense / 16) + 2 * boundary + 2 * boundary / 16;
  // Experts: the same over groups of 2, their outer shard 1/2 of a rank's expert.
  const double expert_bytes = 32 * (3 * 2 * expert + 2 * 2 * expert / 2);
  CHECK(dp_bytes(r) == Approx(dense_bytes + expert_bytes));
  const double optimizer = 12 * std::ceil((32 * dense + boundary) / 32) + 12 * std::ceil(32 * expert / 4);
  CHECK(static_cast<double>(r.memory.optimizer_bytes) == Approx(optimizer).epsilon(1e-6));
  // With one instance per expert copy (4 instances) the experts have no
  // group inside an instance: a layer's expert weights move only across
  // them, whole.
  st.optimizer_instances = 4;
  const auto four = run(m, st);
  const double dense4 = 32 * (3 * 2 * dense + 2 * 2 * dense / 8) + 2 * boundary + 2 * boundary / 8;
  CHECK(dp_bytes(four) == Approx(dense4 + 32 * 2 * 2 * expert));
}

TEST_CASE("Megatron-FSDP's MXFP8 parameters: two quantized copies, each gathered for its own pass",
          "[simulate][megatron_fsdp]") {
  const auto m = test::shipped_model("llama3-8b");
  config::StrategyInput st = llama(1, "optim");
  st.precision = "fp8";
  st.fp8_recipe = "mxfp8";
  st.fp8_param_gather = true;
  const auto r = test::simulate(m, test::shipped_hardware("b200-sxm-180gb"), st).result;
  // A row-wise copy for the forward's gather, a column-wise one for the
  // backward's, each 1 + 1/32 bytes a weight; the outer gather moves both.
  const double copy = 1 + 1.0 / 32;
  const double inner = 32 * (2 * copy + 2) * kLayer + 2 * kBoundary;
  const double outer = 32 * (2 * copy + 2) * kLayer / 8 + 2 * kBoundary / 8;
  CHECK(dp_bytes(r) == Approx(inner + outer));
  // The shard holds both copies of the layers' weights and the boundary in bf16.
  CHECK(static_cast<double>(r.memory.params_bytes) ==
        Approx(2 * std::ceil(kParameters / 8) + (2 * copy - 2) * std::ceil(32 * kLayer / 8)).epsilon(1e-6));
}

TEST_CASE("Megatron-FSDP's per-tensor FP8 parameters: one byte gathered for each pass and transposed for the backward",
          "[simulate][megatron_fsdp]") {
  // Megatron-LM's own example (examples/megatron_fsdp/train_llama3_8b_fsdp_h100_fp8.sh): Llama 3 8B, delayed FP8
  // with --fp8-param-gather, here on 32 H100s in four instances.
  const auto m = test::shipped_model("llama3-8b");
  config::StrategyInput st = llama(1, "optim");
  st.precision = "fp8";
  st.fp8_param_gather = true;
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  const auto r = test::simulate(m, hw, st).result;
  // The fp8 weights gathered at a byte each for the forward and again for
  // the backward, bf16 gradients reduce-scattered; across the instances the
  // 1/8 shard gathered at a byte and the gradient shard reduce-scattered.
  const double inner = 32 * (1 + 1 + 2) * kLayer + 2 * kBoundary;
  const double outer = 32 * (1 + 2) * kLayer / 8 + 2 * kBoundary / 8;
  CHECK(dp_bytes(r) == Approx(inner + outer));
  // A shard holds the layers' weights at a byte (no bf16 copy), the boundary at two.
  CHECK(static_cast<double>(r.memory.params_bytes) ==
        Approx(2 * std::ceil(kParameters / 8) - std::ceil(32 * kLayer / 8)).epsilon(1e-6));
  // On a GPU whose FP8 GEMMs take one layout each backward gather is
  // transposed (read 1, write 1 byte a weight): 32 layers' weights a step,
  // none of it in the forward (the per-step cast of bf16 weights is gone).
  const auto kernels = simulate::kernel_inventory(m, hw, config::resolve_run(m, st).parallel);
  double transposed = 0, cast = 0;
  for (const auto& k : kernels)
    for (std::size_t i = 0; i < k.names.size(); ++i) {
      if (k.names[i] == "fp8.weight_transpose") transposed += static_cast<double>(k.bytes * k.name_counts[i]);
      if (k.names[i].starts_with("fp8.weight_cast")) cast += static_cast<double>(k.bytes * k.name_counts[i]);
    }
  CHECK(transposed == Approx(2 * 32 * kLayer));
  CHECK(cast == 0);
}

TEST_CASE("Megatron-FSDP and the optimizer instances refuse what Megatron-LM refuses or ptsim does not model",
          "[config][megatron_fsdp]") {
  const auto m = test::shipped_model("llama3-8b");
  config::StrategyInput st = llama(1, "optim");
  CHECK(config::resolve_run(m, st).parallel.zero_stage == 3);
  CHECK(config::resolve_run(m, st).parallel.gradient_bytes() == 2);
  st.optimizer_instances = 3;
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("must divide the data parallelism, 32"));
  st.optimizer_instances = 1;
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("there is one"));
  st.optimizer_instances = 4;
  st.dp_sharding_strategy = "optim_grads";
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("optim_grads_params"));
  st.outer_dp_sharding_strategy.reset();
  CHECK(config::resolve_run(m, st).parallel.zero_stage == 2);
  st.fsdp_grad_comm_dtype = "fp32";
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("not modelled"));
  st.fsdp_main_grads_dtype = "fp32";
  CHECK(config::resolve_run(m, st).parallel.gradient_bytes() == 4);
  st.megatron_fsdp.reset();
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("applies to Megatron-FSDP"));
  config::StrategyInput plain;
  plain.gpus = 32;
  plain.global_batch_size = 32;
  plain.optimizer_instances = 2;
  CHECK_THROWS_WITH(config::resolve_run(m, plain), Catch::Contains("splits the distributed optimizer"));
}

TEST_CASE("A launch line's Megatron-FSDP flags give the same strategy as the JSON keys", "[config][megatron_fsdp]") {
  const auto launch =
      test::small_launch({"--use-megatron-fsdp", "--data-parallel-sharding-strategy", "optim_grads_params",
                          "--num-distributed-optimizer-instances", "2", "--outer-dp-sharding-strategy", "optim",
                          "--megatron-fsdp-main-grads-dtype", "bf16", "--init-model-with-meta-device"});
  CHECK(launch.strategy.megatron_fsdp == true);
  CHECK(launch.strategy.optimizer_instances == 2);
  CHECK(launch.strategy.outer_dp_sharding_strategy == "optim");
  CHECK(launch.not_modelled.empty());
  config::StrategyInput st = launch.strategy;
  st.gpus = 16;
  const auto c = config::resolve_run(launch.model, st).parallel;
  CHECK(c.zero_stage == 3);
  CHECK(c.dense_optimizer_group() == 16);
  CHECK(c.gradient_group() == 8);
  // Without --use-megatron-fsdp Megatron-LM never reads the sharding flags.
  const auto ddp = test::small_launch({"--data-parallel-sharding-strategy", "optim_grads_params"});
  CHECK_FALSE(ddp.strategy.dp_sharding_strategy.has_value());
  CHECK(ddp.notes.size() == 1);
}

// Issue 5's parallelisms through the whole flow, held to closed forms:
// interleaved and zero-bubble pipelines, DualPipe, ZeRO memory and traffic,
// context and sequence parallelism, recomputation modes and FP8.
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "ptsim/cost/compute_cost.hpp"
#include "ptsim/workload/op_spec.hpp"
#include "ptsim/workload/step_workload.hpp"
#include "simulate/pipeline_support.hpp"
#include "test_support.hpp"

using namespace ptsim;
using test::balanced_gpt;
using test::bubble_fraction;
using test::pipeline;

namespace {

// Each op of the program of `rank`: its bytes summed over the step, and how
// many tasks it has.
struct OpTotal {
  double bytes = 0;
  int calls = 0;
};
std::map<std::string, OpTotal> op_totals(const simulate::Outcome& out, std::int64_t rank) {
  const auto& w = out.step.workload;
  const auto& program = w.programs[w.program_of_rank[static_cast<std::size_t>(rank)]];
  std::map<std::string, OpTotal> ops;
  for (taskgraph::TaskId t = 0; t < program.num_tasks(); ++t) {
    const auto task = program.task(t);
    OpTotal& op = ops[w.op_names[task.name]];
    op.bytes += static_cast<double>(task.bytes);
    ++op.calls;
  }
  return ops;
}

std::uint64_t max_stage_activations(const report::StepResult& r) {
  std::uint64_t most = 0;
  for (const auto& s : r.stages) most = std::max(most, s.activations_peak_bytes);
  return most;
}

}  // namespace

TEST_CASE("Interleaved 1F1B bubble is (p−1)/(v·m + p−1) with free communication", "[simulate][pipeline]") {
  const auto hw = test::free_network(test::shipped_hardware("a100-sxm4-80gb"));
  for (const auto& [p, v, m] : {std::tuple{4, 2, 8}, std::tuple{4, 2, 16}, std::tuple{2, 4, 4}, std::tuple{4, 2, 4}}) {
    INFO("p=" << p << " v=" << v << " m=" << m);
    auto s = pipeline(p, m, "interleaved");
    s.vpp = v;
    const auto out = test::simulate(balanced_gpt(16), hw, s);
    const double expected = (p - 1.0) / (v * m + p - 1.0);
    CHECK(bubble_fraction(out.result) == Approx(expected).epsilon(0.04));
    // Fewer bubbles than plain 1F1B on the same run.
    const auto plain = test::simulate(balanced_gpt(16), hw, pipeline(p, m, "1f1b"));
    CHECK(out.result.breakdown.pipeline_bubble_s < plain.result.breakdown.pipeline_bubble_s);
  }
}

TEST_CASE("ZB-H1 shrinks 1F1B's bubble at 1F1B's activation memory, ZB-H2 further", "[simulate][pipeline]") {
  // With real kernels B (input gradients, recomputation-free attention
  // backward, norms) costs more than W (weight-gradient GEMMs), so the bubble
  // (p−1)(F+B−W) is more than the third of 1F1B's (p−1)(F+B+W) that equal
  // F, B and W give (tests/strategy checks that third exactly).
  const auto hw = test::free_network(test::shipped_hardware("a100-sxm4-80gb"));
  const std::int64_t p = 4, m = 16;
  const auto base = test::simulate(balanced_gpt(8), hw, pipeline(p, m, "1f1b"));
  const auto h1 = test::simulate(balanced_gpt(8), hw, pipeline(p, m, "zb-h1"));
  const auto h2 = test::simulate(balanced_gpt(8), hw, pipeline(p, m, "zb-h2"));
  const double b0 = base.result.breakdown.pipeline_bubble_s;
  CHECK(h1.result.breakdown.pipeline_bubble_s < 0.7 * b0);
  CHECK(h2.result.breakdown.pipeline_bubble_s < h1.result.breakdown.pipeline_bubble_s);
  CHECK(h1.result.step_time_s < base.result.step_time_s);
  // Same peak activations as 1F1B's stage 0 (p micro-batches between F and W), within 2%.
  CHECK(static_cast<double>(max_stage_activations(h1.result)) <=
        1.02 * static_cast<double>(base.result.stages[0].activations_peak_bytes));
  // ZB-H2 keeps up to 2p − 1 micro-batches alive.
  CHECK(max_stage_activations(h2.result) > max_stage_activations(h1.result));
  // Same work: compute time within 1%.
  CHECK(h1.result.breakdown.compute_s == Approx(base.result.breakdown.compute_s).epsilon(0.01));
}

TEST_CASE("DualPipe runs both directions to completion with a smaller bubble and twice the parameters",
          "[simulate][pipeline]") {
  const auto hw = test::free_network(test::shipped_hardware("a100-sxm4-80gb"));
  const std::int64_t p = 4, m = 16;
  const auto base = test::simulate(balanced_gpt(8), hw, pipeline(p, m, "1f1b"));
  const auto dual = test::simulate(balanced_gpt(8), hw, pipeline(p, m, "dualpipe"));
  // Every micro-batch ran: the same model FLOPs.
  CHECK(dual.step.model_flops == Approx(base.step.model_flops).epsilon(1e-12));
  CHECK(dual.result.breakdown.pipeline_bubble_s < 0.5 * base.result.breakdown.pipeline_bubble_s);
  // Rank r holds model stages r and p−1−r.
  CHECK(static_cast<double>(dual.result.stages[1].static_bytes) ==
        Approx(2.0 * static_cast<double>(base.result.stages[1].static_bytes)).epsilon(0.01));
}

TEST_CASE("ZeRO static memory per GPU follows the ZeRO paper for GPT-3 175B on 384 GPUs", "[simulate][zero]") {
  // TP 8, PP 8, DP 6. A middle stage holds 12 layers; per layer and TP rank
  // Ψ_l = (12h² + 7h)/8 + 6h (QKV, projection and MLP matrices and column
  // biases split, norms and row biases replicated), h = 12288.
  const double h = 12288, nd = 6;
  const double psi = 12 * ((12 * h * h + 7 * h) / 8 + 6 * h);
  // The ZeRO paper's 16-bit gradients (Rajbhandari et al. 2020 §5):
  // 16Ψ · 4Ψ + 12Ψ/N · 2Ψ + 14Ψ/N · 16Ψ/N; Megatron-LM's fp32 gradients
  // under bf16 (its docs/source/distrib_optimizer.md: "bf16 param, fp32
  // grads: 18, distributed optimizer 6 + 12/d"): 18Ψ · 6Ψ + 12Ψ/N ·
  // 2Ψ + 16Ψ/N · 18Ψ/N.
  const std::map<int, double> bf16_grads = {
      {0, 16 * psi}, {1, 2 * psi + 2 * psi + 12 * psi / nd}, {2, 2 * psi + 14 * psi / nd}, {3, 16 * psi / nd}};
  const std::map<int, double> fp32_grads = {
      {0, 18 * psi}, {1, 6 * psi + 12 * psi / nd}, {2, 2 * psi + 16 * psi / nd}, {3, 18 * psi / nd}};
  const auto model = test::shipped_model("gpt3-175b");
  for (const bool in_bf16 : {true, false})
    for (const auto& [stage, bytes] : in_bf16 ? bf16_grads : fp32_grads) {
      INFO("ZeRO-" << stage << (in_bf16 ? ", bf16 gradients" : ", fp32 gradients"));
      config::StrategyInput s;
      s.gpus = 384;
      s.tp = 8;
      s.pp = 8;
      s.global_batch_size = 48;
      s.zero = stage;
      if (in_bf16) s.grad_reduce_in_bf16 = true;
      const auto run = config::resolve_run(model, s);
      const auto step = workload::build_step_workload(run.model, run.parallel);
      CHECK(static_cast<double>(step.stage_static_memory[1].total_bytes()) == Approx(bytes).epsilon(0.01));
    }
}

TEST_CASE("ZeRO-3 moves 1.5 times plain data parallelism's gradient traffic", "[simulate][zero]") {
  // One micro-batch, no pipeline. With G-byte gradients and 2-byte weights,
  // DP all-reduces GΨ once (bus 2(n−1)/n·GΨ); ZeRO-3 gathers the weights for
  // forward and backward and reduce-scatters the gradients:
  // (n−1)/n·(2 + 2 + G)Ψ; ZeRO-1 and -2 reduce-scatter the gradients and
  // gather the weights: (n−1)/n·(G + 2)Ψ. G = 2: 1.5 and 1 times plain DP;
  // G = 4 (Megatron's fp32 default): 1 and 0.75 times.
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  for (const bool in_bf16 : {true, false}) {
    INFO((in_bf16 ? "bf16 gradients" : "fp32 gradients"));
    const double g = in_bf16 ? 2 : 4;
    config::StrategyInput s;
    s.gpus = 8;
    s.global_batch_size = 8;
    if (in_bf16) s.grad_reduce_in_bf16 = true;
    const auto dp = test::simulate(balanced_gpt(4), hw, s);
    s.zero = 3;
    const auto z3 = test::simulate(balanced_gpt(4), hw, s);
    const double plain = dp.result.communication.at("dp").bus_bytes;
    CHECK(plain > 0);
    CHECK(z3.result.communication.at("dp").bus_bytes == Approx((4 + g) / (2 * g) * plain).epsilon(0.01));
    for (const int stage : {1, 2}) {
      s.zero = stage;
      CHECK(test::simulate(balanced_gpt(4), hw, s).result.communication.at("dp").bus_bytes ==
            Approx((2 + g) / (2 * g) * plain).epsilon(0.01));
    }
  }
}

TEST_CASE("Blocking ZeRO-3 collectives leave none of their time hidden", "[simulate][zero]") {
  // DeepSpeed 0.3's ZeRO-3 (--zero3-blocking): every layer waits for its
  // parameter all-gather and the next layer for its gradient reduce-scatter,
  // so the compute stream sits idle for all of the data-parallel time and no
  // kernel shares the GPU with communication: compute takes what it takes on
  // one GPU alone, plus DeepSpeed's own kernels around its gathers. With the
  // default prefetch, the next layer's gathers run under the current one:
  // part of their time is hidden, and the kernels beside them are slowed by
  // the profile's compute-communication factor.
  const auto hw = test::shipped_hardware("dgx-a100-superpod");
  config::StrategyInput s;
  s.gpus = 1;
  s.global_batch_size = 1;
  const auto alone = test::simulate(balanced_gpt(8), hw, s);
  s.gpus = 64;
  s.global_batch_size = 64;
  s.zero = 3;
  s.grad_reduce_in_bf16 = true;
  const auto overlapped = test::simulate(balanced_gpt(8), hw, s);
  s.zero3_blocking = true;
  const auto blocking = test::simulate(balanced_gpt(8), hw, s);
  const auto& dp_blocking = blocking.result.communication.at("dp");
  const auto& dp_overlapped = overlapped.result.communication.at("dp");
  // The same collectives either way, but for the tensors DeepSpeed keeps
  // gathered (fewer than 100,000 elements: a layer's two norms' weights and
  // biases and its four linear biases, 2·1024 + 3072 + 1024 + 2·1024 + 4096
  // + 1024 = 13,312 elements), gathered once a step after the optimizer
  // instead of before each layer's forward and backward: one all-gather of
  // 2 bytes an element fewer a layer, (n − 1)/n of it on the bus.
  const double persistent = 8 * 13312.0;
  CHECK(dp_overlapped.bus_bytes - dp_blocking.bus_bytes == Approx(2 * persistent * 63 / 64).epsilon(1e-9));
  REQUIRE(dp_blocking.time_s > 0);
  CHECK(dp_blocking.exposed_s == Approx(dp_blocking.time_s).epsilon(1e-6));
  CHECK(dp_overlapped.exposed_s < 0.9 * dp_overlapped.time_s);
  // DeepSpeed's kernels: before each gather of a tensor of n elements, its
  // zeroed buffer (2n bytes written) and the rank's shard copied into it
  // (2 · 2n/64 bytes), each at the profile's memory-bound rate with its
  // launch; after the optimizer, the persistent tensors copied out of their
  // gather's buffer (read and write 2 bytes an element), with the optimizer.
  const auto memory_kernel = [&](double bytes) {
    return cost::compute_time(hw, workload::kernel_task(workload::memory_op("k", bytes))).seconds();
  };
  double deepspeed_kernels = 0;
  for (const double n : {1024.0 * 3072, 1024.0 * 1024, 1024.0 * 4096, 4096.0 * 1024})
    deepspeed_kernels += 8 * 2 * (memory_kernel(2 * n) + memory_kernel(4 * n / 64));
  // And as each layer's modules are fetched, forward and backward, the norm
  // of each of its 12 parameters, which the fetch's debug line formats
  // (read 2 bytes an element).
  for (const double n : {1024.0, 1024.0, 1024.0 * 3072, 3072.0, 1024.0 * 1024, 1024.0, 1024.0, 1024.0, 1024.0 * 4096,
                         4096.0, 4096.0 * 1024, 1024.0})
    deepspeed_kernels += 8 * 2 * memory_kernel(2 * n);
  CHECK(blocking.result.breakdown.compute_s ==
        Approx(alone.result.breakdown.compute_s + deepspeed_kernels).epsilon(1e-6));
  CHECK(blocking.result.breakdown.optimizer_s - overlapped.result.breakdown.optimizer_s ==
        Approx(memory_kernel(4 * persistent)).epsilon(1e-6));
  CHECK(overlapped.result.breakdown.compute_s > 1.05 * alone.result.breakdown.compute_s);
  CHECK(blocking.result.step_time_s > overlapped.result.step_time_s);
}

TEST_CASE("Blocking ZeRO-3 collectives need ZeRO stage 3", "[config][zero]") {
  config::StrategyInput s;
  s.gpus = 8;
  s.global_batch_size = 8;
  s.zero = 2;
  s.zero3_blocking = true;
  CHECK_THROWS_WITH(config::resolve_run(test::shipped_model("gpt3-175b"), s),
                    Catch::Contains("--zero3-blocking") && Catch::Contains("ZeRO stage 3"));
}

TEST_CASE("Context parallelism divides activations by cp and passes key/value blocks around the ring",
          "[simulate][cp]") {
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  const auto model = test::shipped_model("llama3-8b");
  const auto run_cp = [&](std::int64_t cp) {
    config::StrategyInput s;
    s.gpus = 8;
    s.tp = 2;
    s.cp = cp;
    s.global_batch_size = 8 / (2 * cp);
    s.seq_length = 16384;
    return test::simulate(model, hw, s);
  };
  const auto one = run_cp(1);
  for (const std::int64_t cp : {2, 4}) {
    INFO("cp=" << cp);
    const auto out = run_cp(cp);
    CHECK(static_cast<double>(out.result.memory.activations_peak_bytes) ==
          Approx(static_cast<double>(one.result.memory.activations_peak_bytes) / static_cast<double>(cp))
              .epsilon(0.01));
    // Each layer: cp−1 key/value blocks forward, and blocks plus their
    // gradients backward; a block is K and V of s/cp tokens, 8 KV heads / TP
    // 2 of width 128, bf16: 2·2·(s/cp)·4·128 bytes.
    const double block = 2.0 * 2 * (16384.0 / static_cast<double>(cp)) * 4 * 128;
    CHECK(out.result.communication.at("cp").bus_bytes ==
          Approx(32 * (static_cast<double>(cp) - 1) * 3 * block).epsilon(1e-9));
  }
}

TEST_CASE("Selective recomputation drops the s² tensors and reruns core attention", "[simulate][recompute]") {
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");
  const nlohmann::json j = {{"num_layers", 4}, {"hidden_size", 1024}, {"num_attention_heads", 16},
                            {"vocab_size", 1024}, {"seq_length", 512}, {"dropout", 0.1}};
  const auto model = config::parse_model(j, "gpt", "gpt");
  config::StrategyInput s;
  s.gpus = 2;
  s.tp = 2;
  s.global_batch_size = 2;
  s.micro_batch_size = 2;
  s.attention_backend = "unfused";
  const auto none = test::simulate(model, hw, s);
  s.recompute = "selective";
  const auto sel = test::simulate(model, hw, s);
  // Per-layer figures are in workload/activation_memory_test.cpp; here: less
  // memory, more time, recomputation reported.
  CHECK(sel.result.memory.activations_peak_bytes < none.result.memory.activations_peak_bytes);
  CHECK(sel.result.breakdown.recompute_s > 0);
  CHECK(sel.result.step_time_s > none.result.step_time_s);
  CHECK(none.result.breakdown.recompute_s == 0);
  // With fused attention the fused kernel is what reruns (Megatron-Core
  // checkpoints core attention whatever its backend): once per layer of the
  // one micro-batch, 2 sequences × 16/2 heads of 512 causal tokens, head dim 64.
  s.attention_backend = "flash";
  const auto fused = test::simulate(model, hw, s);
  const auto kernel = workload::kernel_task(workload::attention_op("attn.flash", 2 * 8, 512, 512, 64, 64, 1.0, true, false));
  // (the engine keeps times in whole nanoseconds: up to 1 ns per kernel)
  CHECK(fused.result.breakdown.recompute_s == Approx(4 * cost::compute_seconds(hw, kernel, cost::Load::Sustained)).margin(4e-9));
}

TEST_CASE("Full recomputation of the first N layers of each stage", "[simulate][recompute]") {
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");
  config::StrategyInput s;
  s.gpus = 1;
  s.global_batch_size = 1;
  s.recompute = "full";
  const auto all = test::simulate(balanced_gpt(8), hw, s);
  s.recompute_num_layers = 2;
  const auto two = test::simulate(balanced_gpt(8), hw, s);
  CHECK(two.result.breakdown.recompute_s == Approx(all.result.breakdown.recompute_s / 4).epsilon(0.02));
  CHECK(two.result.memory.activations_peak_bytes > all.result.memory.activations_peak_bytes);
}

TEST_CASE("FP8 runs the linear GEMMs at the fp8 rate and pays for casts and amax reductions", "[simulate][fp8]") {
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  const auto model = test::shipped_model("llama3-8b");
  config::StrategyInput s;
  s.gpus = 8;
  s.tp = 8;
  s.sequence_parallel = true;
  s.global_batch_size = 1;
  const auto bf16 = test::simulate(model, hw, s);
  s.precision = "fp8";
  const auto fp8 = test::simulate(model, hw, s);
  CHECK(fp8.result.breakdown.compute_s < 0.85 * bf16.result.breakdown.compute_s);
  // Same model FLOPs; the casts are memory-bound kernels named for it.
  CHECK(fp8.step.model_flops == Approx(bf16.step.model_flops).epsilon(1e-12));
  bool casts = false, amax = false;
  for (const auto& name : fp8.step.workload.op_names) {
    casts = casts || name.find("fp8_cast") != std::string::npos;
    amax = amax || name.find("amax") != std::string::npos;
  }
  CHECK(casts);
  CHECK(amax);
}

TEST_CASE("FP8 parameter gathering gathers layer parameters at one byte, transposes instead of casting and caches nothing",
          "[simulate][fp8]") {
  // Llama 3 8B on TP 2 × PP 2 × DP 4, the distributed optimizer gathering
  // after the step (no overlap): per bucket 2 bytes a parameter, or under
  // --fp8-param-gather 1 byte for the layers' parameters and 2 for the
  // embedding (stage 0) and output layer (stage 1). The per-step weight cast
  // (4 or 6 bytes a layer parameter) becomes a transpose (2); the optimizer
  // writes no bf16 weight (24 + 4 bytes a shard parameter) and casts its
  // shard to fp8 (read 4, write 1; current scaling first reads it for the
  // amax, 4, and all-reduces the amaxes over DP before the cast).
  // Without it each layer weight also has an fp8 copy and transpose cached.
  // On a B200 (compute capability 10.0) FP8 GEMMs take any layout and
  // Transformer Engine makes and keeps no transpose (csrc/quantizer.cpp at
  // d0067d0da6): one cached byte a weight, casts that write one copy, and
  // no transpose of the gathered weights.
  const auto model = test::shipped_model("llama3-8b");
  config::StrategyInput s;
  s.gpus = 16;
  s.tp = 2;
  s.pp = 2;
  s.global_batch_size = 8;
  s.precision = "fp8";
  s.distributed_optimizer = true;
  // Parameters of a rank's transformer layers on `stage`.
  const auto layer_params = [&](const strategy::ParallelConfig& c, std::int64_t stage) {
    return static_cast<double>(workload::stage_layer_parameters(model, c, stage).total());
  };
  for (const char* gpu : {"h100-sxm5-80gb", "b200-sxm-180gb"})
    for (const char* recipe : {"delayed", "tensorwise"}) {
      INFO(gpu << " " << recipe);
      const auto hw = test::shipped_hardware(gpu);
      const bool one_copy = std::string(gpu) == "b200-sxm-180gb";
      const double copies = one_copy ? 1 : 2;
      s.fp8_recipe = recipe;
      const bool current = std::string(recipe) == "tensorwise";
      for (const bool fp8_gather : {false, true}) {
        INFO("fp8 parameter gathering " << fp8_gather);
        s.fp8_param_gather = fp8_gather;
        auto run = config::resolve_run(model, s);
        run.parallel = simulate::on_hardware(run.parallel, hw);
        const auto out = test::simulate(model, hw, s);
        for (std::int64_t stage = 0; stage < 2; ++stage) {
          INFO("stage " << stage);
          const auto params = workload::stage_parameters(out.step.model, run.parallel, stage);
          const double layers = layer_params(run.parallel, stage);
          const double rest = static_cast<double>(params.total()) - layers;
          const double shard = std::ceil(static_cast<double>(params.total()) / 4);
          const auto ops = op_totals(out, stage * 8);
          // Memory: bf16 weights, plus Transformer Engine's cached fp8 copy and
          // transpose of each layer weight; fp8 parameters instead of the bf16
          // ones under parameter gathering, with their transpose (1 + 1), or
          // alone where one copy serves both ways (1).
          CHECK(workload::stage_static_memory(out.step.model, run.parallel, stage).params_bytes ==
                Approx(2 * static_cast<double>(params.total()) + (fp8_gather ? copies - 2 : copies) * layers));
          if (fp8_gather) {
            CHECK(ops.at("zero.param_allgather.bucket").bytes == Approx(layers + 2 * rest));
            if (one_copy)
              CHECK(ops.count("fp8.weight_transpose") == 0);
            else
              CHECK(ops.at("fp8.weight_transpose").bytes == Approx(2 * layers));
            CHECK(ops.count("fp8.weight_cast") == 0);
            CHECK(ops.at("optimizer.adam").bytes == Approx(28 * shard));
            CHECK(ops.at("fp8.param_shard_cast").bytes == Approx(5 * shard));
            if (current) {
              CHECK(ops.at("fp8.param_shard_amax").bytes == Approx(4 * shard));
            } else {
              CHECK(ops.count("fp8.param_shard_amax") == 0);
            }
            // One fp32 amax per weight tensor of the stage's 16 layers (QKV,
            // output projection, FC1, FC2), reduced over the 4 DP ranks.
            CHECK(ops.at("fp8.param_amax_allreduce").bytes == Approx(4.0 * 16 * 4));
          } else {
            CHECK(ops.at("zero.param_allgather.bucket").bytes == Approx(2 * (layers + rest)));
            CHECK(ops.at("fp8.weight_cast").bytes == Approx(((current ? 4 : 2) + copies) * layers));
            CHECK(ops.at("optimizer.adam").bytes == Approx(30 * shard));
            CHECK(ops.count("fp8.param_shard_cast") == 0);
            CHECK(ops.count("fp8.param_amax_allreduce") == 0);
          }
        }
        // Gathered under the next forward instead, layer by layer: the layers'
        // parameters only, at the same bytes per parameter.
        s.overlap_param_gather = true;
        const auto overlapped = test::simulate(model, hw, s);
        s.overlap_param_gather.reset();
        CHECK(op_totals(overlapped, 0).at("zero.param_allgather").bytes ==
              Approx((fp8_gather ? 1 : 2) * layer_params(run.parallel, 0)));
      }
    }
}

TEST_CASE("Block-scaled FP8 casts weights both ways, MXFP8 gathers parameters in bf16 and blockwise in fp8",
          "[simulate][fp8]") {
  // Llama 3 8B on B200s (MXFP8 needs Blackwell's tensor cores), TP 2 × PP 2
  // × DP 4 as above. A block-scaled weight cast writes both copies with
  // their scales: read 2, write 2·(1 + 1/32) = 4.0625 bytes a weight, and
  // Transformer Engine caches both (2.0625 bytes) beside the bf16 weight.
  // Under --fp8-param-gather MXFP8 gathers bf16 through the gradient buffer
  // and casts as without it, the optimizer writing its bf16 shard (30 bytes
  // a shard parameter); blockwise gathers the row-wise fp8 copy, transposes
  // it (2) and casts the shard after one amax per 128 × 128 block of the
  // stage's layer weights is reduced over DP.
  const auto hw = test::shipped_hardware("b200-sxm-180gb");
  const auto model = test::shipped_model("llama3-8b");
  config::StrategyInput s;
  s.gpus = 16;
  s.tp = 2;
  s.pp = 2;
  s.global_batch_size = 8;
  s.precision = "fp8";
  s.distributed_optimizer = true;
  const double copy = 1 + 1.0 / 32;
  for (const char* recipe : {"mxfp8", "blockwise"}) {
    const bool mx = std::string(recipe) == "mxfp8";
    s.fp8_recipe = recipe;
    for (const bool fp8_gather : {false, true}) {
      INFO(recipe << ", fp8 parameter gathering " << fp8_gather);
      s.fp8_param_gather = fp8_gather;
      const auto run = config::resolve_run(model, s);
      const auto out = test::simulate(model, hw, s);
      const std::int64_t stage = 1;
      const auto params = workload::stage_parameters(out.step.model, run.parallel, stage);
      const double layers = static_cast<double>(workload::stage_layer_parameters(model, run.parallel, stage).total());
      const double rest = static_cast<double>(params.total()) - layers;
      const double shard = std::ceil(static_cast<double>(params.total()) / 4);
      const auto ops = op_totals(out, stage * 8);
      CHECK(workload::stage_static_memory(out.step.model, run.parallel, stage).params_bytes ==
            Approx(2 * static_cast<double>(params.total()) + (fp8_gather ? 0 : 2 * copy * layers)).epsilon(1e-9));
      if (!fp8_gather || mx) {
        CHECK(ops.at("zero.param_allgather.bucket").bytes == Approx(2 * (layers + rest)));
        CHECK(ops.at("fp8.weight_cast").bytes == Approx((2 + 2 * copy) * layers));
        CHECK(ops.at("optimizer.adam").bytes == Approx(30 * shard));
        CHECK(ops.count("fp8.param_shard_cast") == 0);
        continue;
      }
      CHECK(ops.at("zero.param_allgather.bucket").bytes == Approx(layers + 2 * rest));
      CHECK(ops.at("fp8.weight_transpose").bytes == Approx(2 * layers));
      CHECK(ops.at("optimizer.adam").bytes == Approx(28 * shard));
      CHECK(ops.at("fp8.param_shard_amax").bytes == Approx(4 * shard));
      CHECK(ops.at("fp8.param_shard_cast").bytes == Approx(5 * shard));
      CHECK(ops.at("fp8.param_amax_allreduce").bytes == Approx(4 * std::ceil(layers / (128 * 128))));
    }
  }
  // NVFP4 (--fp4-format e2m1): weights cast with an amax pass, read 2 + 2,
  // write 2·(1/2 + 1/16); under --fp4-param-gather held as their NVFP4
  // row-wise and column-wise data in place of bf16 (1/2 + 1/2), gathered at half a byte,
  // their column-wise copy made by a pass of read 1/2, write 1/2, the shard
  // cast (read 4, write 1/2) after one amax per 16 × 16 weight block is
  // reduced over DP.
  s.fp8_recipe.reset();
  s.fp8_param_gather.reset();
  s.precision.reset();
  s.fp4_format = "e2m1";
  const double fp4_copy = 0.5 + 1.0 / 16;
  for (const bool fp4_gather : {false, true}) {
    INFO("NVFP4, parameter gathering " << fp4_gather);
    s.fp4_param_gather = fp4_gather;
    const auto run = config::resolve_run(model, s);
    REQUIRE(run.parallel.precision == Dtype::Nvfp4);
    const auto out = test::simulate(model, hw, s);
    const std::int64_t stage = 1;
    const auto params = workload::stage_parameters(out.step.model, run.parallel, stage);
    const double layers = static_cast<double>(workload::stage_layer_parameters(model, run.parallel, stage).total());
    const double rest = static_cast<double>(params.total()) - layers;
    const double shard = std::ceil(static_cast<double>(params.total()) / 4);
    const auto ops = op_totals(out, stage * 8);
    CHECK(workload::stage_static_memory(out.step.model, run.parallel, stage).params_bytes ==
          Approx(2 * static_cast<double>(params.total()) + (fp4_gather ? -1 : 2 * fp4_copy) * layers).epsilon(1e-9));
    if (!fp4_gather) {
      CHECK(ops.at("fp4.weight_cast").bytes == Approx((4 + 2 * fp4_copy) * layers));
      CHECK(ops.at("zero.param_allgather.bucket").bytes == Approx(2 * (layers + rest)));
      continue;
    }
    CHECK(ops.at("zero.param_allgather.bucket").bytes == Approx(0.5 * layers + 2 * rest));
    CHECK(ops.at("fp4.weight_transpose").bytes == Approx(layers));
    CHECK(ops.at("optimizer.adam").bytes == Approx(28 * shard));
    CHECK(ops.at("fp4.param_shard_amax").bytes == Approx(4 * shard));
    CHECK(ops.at("fp4.param_shard_cast").bytes == Approx(4.5 * shard));
    CHECK(ops.at("fp4.param_amax_allreduce").bytes == Approx(4 * std::ceil(layers / 256)));
  }
  s.fp4_format.reset();
  s.fp4_param_gather.reset();
  s.precision = "fp8";
  // MXFP8 on Hopper, whose tensor cores do not multiply it, is refused by name.
  s.fp8_recipe = "mxfp8";
  s.fp8_param_gather.reset();
  CHECK_THROWS_WITH(test::simulate(model, test::shipped_hardware("h100-sxm5-80gb"), s),
                    Catch::Contains("has no mxfp8 peak rate") && Catch::Contains("Hopper's do not"));
  s.fp8_recipe.reset();
  s.precision = "nvfp4";
  CHECK_THROWS_WITH(test::simulate(model, test::shipped_hardware("h100-sxm5-80gb"), s),
                    Catch::Contains("has no nvfp4 peak rate"));
}

TEST_CASE("MTP depths in the run's format have their weights quantized as the layers' are", "[simulate][fp8]") {
  // Llama 3 8B with one MTP depth on B200s, TP 2 × PP 2 × DP 4: the depth
  // sits on stage 1. Its weights on a rank, by hand: the transformer layer
  // (QKV 4096 × (4096 + 2 · 1024) and output 4096 × 4096, FC1 and FC2
  // 3 · 4096 · 14336, both split over TP 2; two RMSNorms of 4096 whole),
  // the 2h → h projection split over TP and three norms. Megatron-Core builds
  // the depth's weights in get_fp8_context's initialization context and runs
  // it in the FP8 context, so under MXFP8 Transformer Engine casts them and
  // caches both block-scaled copies as it does a layer's (2.0625 bytes a
  // weight beside the bf16 one, a cast of read 2, write 4.0625); under NVFP4
  // the depth runs in bf16 (no copies) unless module_precision gives it MXFP8.
  const auto hw = test::shipped_hardware("b200-sxm-180gb");
  auto model = test::shipped_model("llama3-8b");
  model.mtp_num_layers = 1;
  const double layer = (4096.0 * (4096 + 2 * 1024) + 4096.0 * 4096 + 3 * 4096.0 * 14336) / 2 + 2 * 4096;
  const double depth = layer + 2 * 4096.0 * 4096 / 2 + 3 * 4096;
  config::StrategyInput s;
  s.gpus = 16;
  s.tp = 2;
  s.pp = 2;
  s.global_batch_size = 8;
  s.distributed_optimizer = true;
  const double mx = 1 + 1.0 / 32, fp4 = 0.5 + 1.0 / 16;
  struct Case {
    const char* precision;
    const char* recipe;
    const char* modules;
    double copies_per_weight;  // of the layers' weights, beside bf16
    double depth_copies;       // of the depth's
  };
  for (const Case& k : {Case{"fp8", "mxfp8", nullptr, 2 * mx, 2 * mx}, Case{"nvfp4", nullptr, nullptr, 2 * fp4, 0},
                        Case{"nvfp4", nullptr, "mtp=mxfp8", 2 * fp4, 2 * mx}}) {
    INFO(k.precision << " " << (k.modules ? k.modules : ""));
    s.precision = k.precision;
    if (k.recipe) s.fp8_recipe = k.recipe;
    if (k.modules) s.module_precision = k.modules;
    const auto run = config::resolve_run(model, s);
    const auto out = test::simulate(model, hw, s);
    for (std::int64_t stage = 0; stage < 2; ++stage) {
      INFO("stage " << stage);
      const auto params = workload::stage_parameters(out.step.model, run.parallel, stage);
      const double layers = static_cast<double>(workload::stage_layer_parameters(model, run.parallel, stage).total());
      const double with_depth = stage == 1 ? depth : 0;
      CHECK(workload::stage_static_memory(out.step.model, run.parallel, stage).params_bytes ==
            Approx(2 * static_cast<double>(params.total()) + k.copies_per_weight * layers + k.depth_copies * with_depth)
                .epsilon(1e-9));
      const auto ops = op_totals(out, stage * 8);
      if (std::string(k.precision) == "fp8") {
        CHECK(ops.at("fp8.weight_cast").bytes == Approx((2 + 2 * mx) * (layers + with_depth)));
      } else {
        CHECK(ops.at("fp4.weight_cast").bytes == Approx((4 + 2 * fp4) * layers));
        if (k.modules && stage == 1)
          CHECK(ops.at("fp8.module_weight_cast").bytes == Approx((2 + 2 * mx) * depth));
        else
          CHECK(ops.count("fp8.module_weight_cast") == 0);
      }
    }
    s.fp8_recipe.reset();
    s.module_precision.reset();
  }
}

TEST_CASE("Per-rank parameters add up to the model's layer counts", "[workload][moe]") {
  // Without model parallelism a rank holds each layer whole; with TP/EP the
  // split parts add up over the group (replicated parts counted once).
  for (const char* name : {"mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b", "gpt-oss-120b", "llama3-8b"}) {
    INFO(name);
    const auto m = test::shipped_model(name);
    strategy::ParallelConfig c;
    for (std::int64_t layer : {std::int64_t{0}, m.num_layers - 1}) {
      const auto whole = workload::layer_parameters_per_rank(m, c, layer);
      CHECK(whole.total() == model::layer_parameters(m, layer));
      // The routed experts: all of them, where a token runs top-k.
      const std::int64_t idle = model::layer_parameters(m, layer) - model::active_layer_parameters(m, layer);
      if (m.is_moe_layer(layer)) {
        CHECK(whole.expert * (m.num_moe_experts - m.moe_router_topk) == idle * m.num_moe_experts);
      } else {
        CHECK(whole.expert == 0);
      }
    }
  }
}

TEST_CASE("A layer's parameter tensors, one by one, add up to its parameters", "[workload][zero]") {
  // GPT: two LayerNorms (weight, bias), QKV and output projection, fc1 and
  // fc2, each weight with its bias: 12 tensors. Llama: two RMSNorm weights
  // and four bias-free weights (SwiGLU's gate and up fused in fc1): 6.
  strategy::ParallelConfig c;
  c.tp = 8;
  for (const auto& [name, count] : {std::pair{"gpt3-175b", 12}, {"llama3-70b", 6}}) {
    INFO(name);
    const auto m = test::shipped_model(name);
    const auto tensors = workload::layer_parameter_tensors(m, c, 0);
    CHECK(tensors.size() == static_cast<std::size_t>(count));
    std::int64_t sum = 0;
    for (const std::int64_t n : tensors) sum += n;
    CHECK(sum == workload::layer_parameters_per_rank(m, c, 0).dense);
  }
  // GPT-3 by hand: h = 12288, QKV weight h·3h/8, fc1 weight h·4h/8.
  const auto gpt = workload::layer_parameter_tensors(test::shipped_model("gpt3-175b"), c, 0);
  CHECK(gpt[2] == 12288LL * 3 * 12288 / 8);
  CHECK(gpt[8] == 12288LL * 4 * 12288 / 8);
  CHECK_THROWS_WITH(workload::layer_parameter_tensors(test::shipped_model("mixtral-8x7b"), c, 0),
                    Catch::Contains("MoE"));
}

TEST_CASE("DeepSpeed 0.3's ZeRO-3 pays a copy per rank for every parameter tensor", "[simulate][zero]") {
  // Blocking ZeRO-3 gathers each of a GPT layer's 4 weights before the
  // layer's forward and again before its backward (its 8 smaller tensors
  // stay gathered), and reduce-scatters each of its 12 gradients: 20 calls
  // per layer, plus one reduce-scatter each for the embedding and the
  // output layer and the once-a-step gather of the kept tensors, each over a
  // list of one tensor per rank. A launch overhead 10 µs longer lengthens
  // the data-parallel time by exactly 10 µs per copy: (20 · 8 + 3) · 64 of
  // them on 64 ranks.
  auto hw = test::shipped_hardware("dgx-a100-superpod");
  REQUIRE(!(hw.calibration && hw.calibration->kernel_launch_overhead_s));
  config::StrategyInput s;
  s.gpus = 64;
  s.global_batch_size = 64;
  s.zero = 3;
  s.grad_reduce_in_bf16 = true;
  s.zero3_blocking = true;
  const auto base = test::simulate(balanced_gpt(8), hw, s);
  hw.gpu.kernel_launch_overhead_s += 10e-6;
  const auto slower = test::simulate(balanced_gpt(8), hw, s);
  const double copies = (20.0 * 8 + 3) * 64;
  CHECK(slower.result.communication.at("dp").time_s - base.result.communication.at("dp").time_s ==
        Approx(copies * 10e-6).epsilon(1e-3));
  // Prefetching ZeRO-3 (FSDP-like, one collective per layer) has no list copies.
  s.zero3_blocking.reset();
  const auto prefetch = test::simulate(balanced_gpt(8), hw, s);
  hw.gpu.kernel_launch_overhead_s -= 10e-6;
  const auto prefetch_base = test::simulate(balanced_gpt(8), hw, s);
  CHECK(prefetch.result.communication.at("dp").time_s ==
        Approx(prefetch_base.result.communication.at("dp").time_s).epsilon(1e-9));
}

namespace {

model::ModelSpec tiny_moe(std::int64_t topk) {
  const nlohmann::json j = {{"num_layers", 2},        {"hidden_size", 512},        {"num_attention_heads", 8},
                            {"vocab_size", 1024},     {"seq_length", 256},         {"num_moe_experts", 8},
                            {"moe_router_topk", topk}, {"moe_ffn_hidden_size", 1024}};
  return config::parse_model(j, "tiny-moe", "tiny-moe");
}

}  // namespace

TEST_CASE("MoE all-to-all moves 2·tokens·hidden·top-k·(ep−1)/ep bytes per direction", "[simulate][moe]") {
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  config::StrategyInput s;
  s.gpus = 4;
  s.ep = 4;
  s.global_batch_size = 4;
  const double tokens = 256, h = 512, k = 2, ep = 4, layers = 2;
  const auto out = test::simulate(tiny_moe(2), hw, s);
  // Dispatch and combine forward, and both again backward, per MoE layer;
  // before the forward dispatch the per-expert token counts (8 experts, 8
  // bytes each) are all-gathered over the 4 EP ranks: 8·8·4·3/4 bus bytes.
  const double per_direction = 2 * tokens * h * k * (ep - 1) / ep;
  const double counts = 8.0 * 8 * ep * (ep - 1) / ep;
  CHECK(out.result.communication.at("ep").bus_bytes ==
        Approx(4 * layers * per_direction + layers * counts).epsilon(1e-12));
}

TEST_CASE("Without expert parallelism every expert is local: no all-to-all, the same model work",
          "[simulate][moe]") {
  // ep = 1 is the (ep−1)/ep = 0 end of the formula above; it used to fail,
  // emitting the all-to-alls on an expert group of one rank.
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  config::StrategyInput s;
  s.gpus = 4;
  s.global_batch_size = 4;
  const auto local = test::simulate(tiny_moe(2), hw, s);
  CHECK(local.result.communication.at("ep").bus_bytes == 0);
  s.ep = 4;
  const auto spread = test::simulate(tiny_moe(2), hw, s);
  CHECK(local.step.model_flops == Approx(spread.step.model_flops).epsilon(1e-12));
}

TEST_CASE("MoE model FLOPs grow with the experts each token runs", "[simulate][moe]") {
  // Each routed token-expert pair costs fc1 and fc2 of 2·h·f FLOPs forward,
  // three times that with backward: 12·h·f per token per layer per unit of top-k.
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  config::StrategyInput s;
  s.gpus = 4;
  s.ep = 4;
  s.global_batch_size = 4;
  std::vector<double> flops;
  for (const std::int64_t k : {1, 2, 3}) flops.push_back(test::simulate(tiny_moe(k), hw, s).step.model_flops);
  const double tokens = 4 * 256, h = 512, f = 1024, layers = 2;
  CHECK(flops[1] - flops[0] == Approx(12 * h * f * tokens * layers).epsilon(1e-9));
  CHECK(flops[2] - flops[1] == Approx(12 * h * f * tokens * layers).epsilon(1e-9));
}

TEST_CASE("A capacity factor pads expert work without adding model FLOPs", "[simulate][moe]") {
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  config::StrategyInput s;
  s.gpus = 4;
  s.ep = 4;
  s.global_batch_size = 4;
  const auto dropless = test::simulate(tiny_moe(2), hw, s);
  s.moe_capacity_factor = 1.5;
  const auto padded = test::simulate(tiny_moe(2), hw, s);
  CHECK(padded.step.model_flops == Approx(dropless.step.model_flops).epsilon(1e-12));
  CHECK(padded.result.breakdown.compute_s > dropless.result.breakdown.compute_s);
}

TEST_CASE("Megatron-LM 2021's scatter-gather sends 1/t of each activation between stages", "[simulate][pipeline]") {
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");
  config::StrategyInput s;
  s.gpus = 16;
  s.tp = 8;
  s.pp = 2;
  s.global_batch_size = 4;
  // Untied embeddings: the only pipeline traffic is the sends.
  const nlohmann::json j = {{"num_layers", 8},   {"hidden_size", 1024}, {"num_attention_heads", 16},
                            {"vocab_size", 128}, {"seq_length", 512},   {"tie_embeddings", false}};
  const auto model = config::parse_model(j, "untied", "untied");
  const auto plain = test::simulate(model, hw, s);
  s.scatter_gather_pipeline = true;
  const auto scattered = test::simulate(model, hw, s);
  // Pipeline bus bytes shrink by t; the pieces are all-gathered over TP.
  CHECK(scattered.result.communication.at("pp").bus_bytes ==
        Approx(plain.result.communication.at("pp").bus_bytes / 8).epsilon(1e-9));
  CHECK(scattered.result.communication.at("tp").bus_bytes > plain.result.communication.at("tp").bus_bytes);
}

TEST_CASE("TP communication overlap hides sequence parallelism's gathers and scatters", "[simulate][tp]") {
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  config::StrategyInput s;
  s.gpus = 8;
  s.tp = 8;
  s.sequence_parallel = true;
  s.global_batch_size = 1;
  const auto model = test::shipped_model("llama3-8b");
  const auto plain = test::simulate(model, hw, s);
  s.tp_comm_overlap = true;
  const auto overlapped = test::simulate(model, hw, s);
  CHECK(overlapped.result.communication.at("tp").exposed_s < 0.5 * plain.result.communication.at("tp").exposed_s);
  CHECK(overlapped.result.step_time_s < plain.result.step_time_s);
  // Same traffic, only hidden.
  CHECK(overlapped.result.communication.at("tp").bus_bytes ==
        Approx(plain.result.communication.at("tp").bus_bytes).epsilon(1e-12));
}

TEST_CASE("Without the async TP all-reduce every TP collective is exposed", "[simulate][tp]") {
  // One TP group, no pipeline, no data parallelism: the only thing TP
  // communication can hide behind is the weight-gradient GEMM that runs
  // beside a column-parallel linear's input-gradient all-reduce.
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");
  config::StrategyInput s;
  s.gpus = 8;
  s.tp = 8;
  s.global_batch_size = 1;
  const auto model = test::shipped_model("llama3-8b");
  const auto async = test::simulate(model, hw, s);
  s.no_async_tp_allreduce = true;
  const auto blocking = test::simulate(model, hw, s);
  const auto& tp_async = async.result.communication.at("tp");
  const auto& tp_blocking = blocking.result.communication.at("tp");
  // Same collectives, same bytes.
  CHECK(tp_blocking.bus_bytes == Approx(tp_async.bus_bytes).epsilon(1e-12));
  // Nothing runs beside them now: exposed is all of their time.
  CHECK(tp_blocking.exposed_s == Approx(tp_blocking.time_s).epsilon(1e-9));
  CHECK(tp_async.exposed_s < tp_async.time_s);
  // The step grows by what had been hidden, less the slowdown the overlapped
  // GEMMs had paid for sharing the GPU with communication: at most that.
  const double hidden = tp_async.time_s - tp_async.exposed_s;
  CHECK(blocking.result.step_time_s > async.result.step_time_s);
  CHECK(blocking.result.step_time_s - async.result.step_time_s <= hidden * (1 + 1e-9));
  // Sequence parallelism's reduce-scatter runs beside the weight gradient either way.
  s.sequence_parallel = true;
  const auto sp_blocking = test::simulate(model, hw, s);
  s.no_async_tp_allreduce.reset();
  const auto sp_async = test::simulate(model, hw, s);
  CHECK(sp_blocking.result.step_time_s == sp_async.result.step_time_s);
}

TEST_CASE("Under SP the gradients of TP-replicated parameters are all-reduced over TP once a step",
          "[simulate][sp]") {
  // GPT-1.7B (24 layers, h 2304, LayerNorm, biased linears) at TP 2 × PP 2 ×
  // DP 2. Per layer, every TP rank holds two LayerNorms (weight and bias:
  // 4h) and the biases added after the output projection's and FC2's
  // reductions (2h) whole; under SP each trains them on its own tokens and
  // Megatron-Core all-reduces their fp32 gradients over TP after the DP
  // reduction (finalize_model_grads.py). 12 layers a stage; the last stage
  // also holds the final LayerNorm (2h). Without SP the ranks' gradients
  // agree and nothing is reduced.
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");
  const auto model = test::shipped_model("narayanan21-gpt-1.7b");
  const double h = 2304;
  config::StrategyInput s;
  s.gpus = 8;
  s.tp = 2;
  s.pp = 2;
  s.global_batch_size = 4;
  s.sequence_parallel = true;
  const auto with_sp = test::simulate(model, hw, s);
  const auto first = op_totals(with_sp, 0).at("tp_replicated_grads.allreduce");
  const auto last = op_totals(with_sp, 4).at("tp_replicated_grads.allreduce");  // rank 4: stage 1 (TP 2 × DP 2 a stage)
  CHECK(first.calls == 1);
  CHECK(first.bytes == Approx(4 * 12 * 6 * h));
  CHECK(last.bytes == Approx(4 * (12 * 6 * h + 2 * h)));
  s.sequence_parallel = false;
  CHECK(op_totals(test::simulate(model, hw, s), 0).count("tp_replicated_grads.allreduce") == 0);
}

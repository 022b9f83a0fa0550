// --fsdp fsdp2: PyTorch FSDP2 as torchtitan runs it, against closed forms of
// its traffic and memory for Llama 3 8B on eight GPUs.
#include <cmath>
#include <map>
#include <string>

#include "ptsim/simulate/kernel_inventory.hpp"
#include "simulate/llama3_8b_parameters.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

using test::llama3_8b::kBoundary;
using test::llama3_8b::kLayer;
using test::llama3_8b::kParameters;

// Llama 3 8B under `fsdp` on `gpus` GPUs, micro-batches of 2 × 8192 tokens,
// one per rank, full recomputation.
config::StrategyInput llama_fsdp(std::int64_t gpus, const char* fsdp) {
  config::StrategyInput st;
  st.gpus = gpus;
  st.global_batch_size = 2 * gpus;
  st.micro_batch_size = 2;
  st.seq_length = 8192;
  st.recompute = "full";
  st.fsdp = fsdp;
  return st;
}

report::StepResult run(const config::StrategyInput& st, simulate::Mode mode = simulate::Mode::Explicit) {
  return test::simulate(test::shipped_model("llama3-8b"), test::shipped_hardware("h100-sxm5-80gb"), st, mode).result;
}

report::StepResult run(const char* reshard) {
  config::StrategyInput st = llama_fsdp(8, "fsdp2");
  if (reshard != nullptr) st.reshard_after_forward = reshard;
  return run(st);
}

}  // namespace

TEST_CASE("FSDP2 gathers bf16 blocks and reduce-scatters fp32 gradients: bytes per step by reshard policy",
          "[simulate][fsdp]") {
  static_assert(kLayer == 218112000.0);
  // One micro-batch per rank. Each gather moves a block's bf16 parameters
  // (2 bytes each), each reduce-scatter its fp32 gradients (4); the root
  // module's gradients (embedding, output layer, final norm) are
  // reduce-scattered once.
  const double reduce = 32 * 4 * kLayer + 4 * kBoundary;
  // torchtitan's default: every block but the last gathers again for its backward.
  CHECK(static_cast<double>(run(nullptr).communication.at("dp").bytes) == Approx((32 + 31) * 2 * kLayer + reduce));
  CHECK(static_cast<double>(run("always").communication.at("dp").bytes) == Approx(64 * 2 * kLayer + reduce));
  CHECK(static_cast<double>(run("never").communication.at("dp").bytes) == Approx(32 * 2 * kLayer + reduce));
}

TEST_CASE("FSDP2 keeps 16 bytes a parameter, sharded: fp32 parameter and gradient, Adam's two moments",
          "[simulate][fsdp]") {
  const auto r = run(nullptr);
  const double shard = std::ceil(kParameters / 8);
  CHECK(r.memory.params_bytes == 0);  // no bf16 copy beside the fp32 shard
  CHECK(static_cast<double>(r.memory.grads_bytes) == Approx(4 * shard));
  CHECK(static_cast<double>(r.memory.optimizer_bytes) == Approx(12 * shard));
}

TEST_CASE("HSDP shards inside groups and all-reduces each reduced shard across them: bytes and memory per tier",
          "[simulate][fsdp]") {
  // 32 GPUs as 4 replicas of 8-way shard groups (torchtitan's
  // data_parallel_replicate_degree 4, data_parallel_shard_degree 8).
  config::StrategyInput st = llama_fsdp(32, "fsdp2");
  st.dp_shard = 8;
  const auto r = run(st);
  // Inside a shard group as with FSDP over 8 ranks; across the replicas,
  // each rank all-reduces its fp32 gradient shard, 4·P/8 bytes a step.
  const double shard_tier = (32 + 31) * 2 * kLayer + 32 * 4 * kLayer + 4 * kBoundary;
  CHECK(static_cast<double>(r.communication.at("dp").bytes) == Approx(shard_tier + 4 * kParameters / 8));
  CHECK(static_cast<double>(r.memory.optimizer_bytes) == Approx(12 * std::ceil(kParameters / 8)));
  // The same split named by its replicas; symmetric mode agrees.
  st.dp_shard.reset();
  st.dp_replicate = 4;
  const auto symmetric = run(st, simulate::Mode::Symmetric);
  CHECK(symmetric.communication.at("dp").bytes == r.communication.at("dp").bytes);
  CHECK(symmetric.step_time_s == Approx(r.step_time_s).epsilon(1e-9));
}

TEST_CASE("FSDP1 gathers into its flat buffer and casts on side streams: FSDP2's traffic, none of its copies",
          "[simulate][fsdp]") {
  // FULL_SHARD (its default) gathers every unit again for its backward; the
  // bytes are FSDP2's with every block resharded, and the compute stream
  // carries no copy-out or copy-in: a step as long as Megatron-style ZeRO-3's.
  config::StrategyInput st = llama_fsdp(8, "fsdp1");
  const auto fsdp1 = run(st);
  CHECK(static_cast<double>(fsdp1.communication.at("dp").bytes) ==
        Approx(64 * 2 * kLayer + 32 * 4 * kLayer + 4 * kBoundary));
  CHECK(fsdp1.memory.params_bytes == 0);
  st.fsdp.reset();
  st.zero = 3;
  const auto zero3 = run(st);
  CHECK(fsdp1.breakdown.compute_s == Approx(zero3.breakdown.compute_s).epsilon(1e-3));
  st.fsdp = "fsdp2";
  st.reshard_after_forward = "always";
  CHECK(run(st).breakdown.compute_s > fsdp1.breakdown.compute_s);
}

TEST_CASE("FSDP2 refuses what it cannot be, and what ptsim does not model", "[config][fsdp]") {
  const auto m = test::shipped_model("llama3-8b");
  config::StrategyInput st;
  st.gpus = 16;
  st.global_batch_size = 16;
  st.fsdp = "fsdp2";
  st.zero = 1;
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("contradicts --fsdp, which shards"));
  st.zero.reset();
  st.pp = 2;  // torchtitan keeps blocks gathered under pipeline parallelism
  CHECK(config::resolve_run(m, st).parallel.fsdp_gathers_once_a_step());
  st.reshard_after_forward = "always";
  CHECK_FALSE(config::resolve_run(m, st).parallel.fsdp_gathers_once_a_step());
  CHECK(config::resolve_run(m, st).parallel.zero_stage == 3);
  st.dp_shard = 3;  // of dp 8
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("must divide the data parallelism, 8"));
  st.dp_shard.reset();
  st.fsdp.reset();
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("is an FSDP policy"));
}

TEST_CASE("FSDP2 under pipeline parallelism gathers a block once a step and reduce-scatters once what it accumulated",
          "[simulate][fsdp]") {
  // Llama 3 8B on 16 GPUs, two stages of 16 blocks, FSDP over 8: `m`
  // micro-batches of 2 × 8192 tokens a replica. torch.distributed.pipelining
  // keeps an FSDP2 stage's blocks gathered and its gradients unsharded until
  // the stage's last backward (torchtitan's default there).
  const auto m = test::shipped_model("llama3-8b");
  const auto pipeline = [&](std::int64_t micro_batches, const char* reshard) {
    config::StrategyInput st = llama_fsdp(16, "fsdp2");
    st.pp = 2;
    st.global_batch_size = 8 * 2 * micro_batches;
    if (reshard != nullptr) st.reshard_after_forward = reshard;
    return st;
  };
  // Stage 0 (rank 0): 16 blocks gathered once (2 bytes a parameter) and
  // reduce-scattered once (fp32), and the embedding's gradients.
  const double once = 16 * (2 + 4) * kLayer + 4 * 128256.0 * 4096;
  for (const std::int64_t mb : {4, 8}) {
    const auto r = run(pipeline(mb, nullptr));
    CHECK(static_cast<double>(r.communication.at("dp").bytes) == Approx(once));
  }
  // Resharding after every forward gathers twice and reduces every micro-batch.
  const auto always = run(pipeline(4, "always"));
  CHECK(static_cast<double>(always.communication.at("dp").bytes) ==
        Approx(4 * (16 * (2 + 2 + 4) * kLayer + 4 * 128256.0 * 4096)));
  // Every later micro-batch adds each block's gradients to the unsharded
  // ones: 3 of 4 backwards of 32 blocks (both stages), 6 bytes a parameter.
  // (Reduced in bf16 here, so that the copy into the reduce-scatter's input,
  // 4 bytes a parameter, is a kernel of another size.)
  config::StrategyInput bf16_reduce = pipeline(4, nullptr);
  bf16_reduce.grad_reduce_in_bf16 = true;
  const auto run_of = config::resolve_run(m, bf16_reduce);
  double accumulated = 0, calls = 0;
  for (const auto& k :
       simulate::kernel_inventory(run_of.model, test::shipped_hardware("h100-sxm5-80gb"), run_of.parallel))
    for (const auto& name : k.names)
      if (name == "fsdp.grad_accumulate") {
        accumulated += static_cast<double>(k.bytes * k.count);
        calls += static_cast<double>(k.count);
      }
  CHECK(calls == 3 * 32);
  CHECK(accumulated == Approx(3 * 32 * 6 * kLayer));
  // The stage holds its blocks' gathered parameters (7/8 of them from the
  // others, bf16) and unsharded bf16 gradients through the step: more than
  // resharding after every forward, which holds one or two blocks at a time.
  const auto kept = run(pipeline(4, nullptr));
  CHECK(static_cast<double>(kept.memory.peak_bytes - always.memory.peak_bytes) > 14 * kLayer * (2.0 * 7 / 8 + 2));
  // FSDP1 is not what torch.distributed.pipelining drives.
  config::StrategyInput fsdp1 = pipeline(4, "never");
  fsdp1.fsdp = "fsdp1";
  CHECK_THROWS_WITH(config::resolve_run(m, fsdp1), Catch::Contains("FSDP2 modules only"));
}

TEST_CASE("FSDP2 under a zero-bubble pipeline frees a block's gathered parameters after its last W",
          "[simulate][fsdp]") {
  // Llama 3 8B on 16 GPUs, two stages, FSDP over 8, 4 micro-batches. A
  // stage keeps its blocks gathered (and their gradients unsharded) through
  // the step; the last block to use them is the last backward, which under
  // a zero-bubble split is the W, whose weight gradients go into them.
  const auto m = test::shipped_model("llama3-8b");
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  const auto end_of_step = [&](const char* schedule) {
    config::StrategyInput st = llama_fsdp(16, "fsdp2");
    st.pp = 2;
    st.global_batch_size = 8 * 2 * 4;
    st.schedule = schedule;
    const config::ResolvedRun r = config::resolve_run(m, st);
    simulate::Request request{r.model, hw, r.parallel, simulate::Mode::Explicit, {0}, {}};
    const auto out = simulate::simulate_step(request);
    REQUIRE_FALSE(out.run.memory_samples.empty());
    const auto& stats = out.run.ranks.at(0);
    return std::pair{static_cast<double>(out.run.memory_samples.back().bytes - stats.base_memory_bytes),
                     static_cast<double>(stats.peak_memory_bytes - stats.base_memory_bytes)};
  };
  // Stage 0 holds 16 blocks: 7/8 of each gathered from the others and its
  // unsharded bf16 gradients, 2 · 7/8 + 2 bytes a parameter.
  const double held = 16 * kLayer * (2.0 * 7 / 8 + 2);
  for (const char* schedule : {"1f1b", "zb-h1"}) {
    INFO(schedule);
    const auto [end, peak] = end_of_step(schedule);
    CHECK(peak > held);       // held through the step ...
    CHECK(end < kLayer / 2);  // ... and none of it after
  }
}

TEST_CASE("torchtitan's foreach AdamW moves 84 bytes a shard parameter after a 12-byte gradient clip",
          "[simulate][fsdp]") {
  const auto m = test::shipped_model("llama3-8b");
  config::StrategyInput st = llama_fsdp(8, "fsdp2");
  const auto bytes_of = [&](const config::StrategyInput& in) {
    const auto run = config::resolve_run(m, in);
    std::map<std::string, double> out;
    for (const auto& k : simulate::kernel_inventory(run.model, test::shipped_hardware("h100-sxm5-80gb"), run.parallel))
      for (const auto& name : k.names)
        if (name.rfind("optimizer.", 0) == 0) out[name] += static_cast<double>(k.bytes * k.count);
    return out;
  };
  // The fp32 shard of every parameter (the vocabulary padded to 128,256 already).
  const double shard = std::ceil(kParameters / 8);
  const auto fused = bytes_of(st);
  CHECK(fused.at("optimizer.adam") == Approx(28 * shard));  // 4 gradient + 12 read + 12 written
  CHECK(fused.count("optimizer.grad_norm") == 0);
  st.optimizer_impl = "foreach";
  const auto foreach = bytes_of(st);
  CHECK(foreach.count("optimizer.adam") == 0);
  CHECK(foreach.at("optimizer.adamw_foreach") == Approx(84 * shard));
  CHECK(foreach.at("optimizer.grad_norm") == Approx(4 * shard));
  CHECK(foreach.at("optimizer.grad_clip") == Approx(8 * shard));
  // Without FSDP the optimizer is the framework's fused kernel.
  st.fsdp.reset();
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("over FSDP's fp32 shards"));
}

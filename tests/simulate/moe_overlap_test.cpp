// Megatron-Core's EP communication overlap (combined 1F1B) and its delayed
// expert weight gradients, through the whole flow: what they hide, what they
// cost in memory, and the configurations Megatron-Core refuses.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "ptsim/common/error.hpp"
#include "ptsim/config/load_model.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

// Four MoE layers whose experts sit on 16 ranks over two H100 nodes, so that
// half of each all-to-all crosses InfiniBand; their experts' GEMMs
// take about twice as long as the exchanges.
model::ModelSpec moe_model(int layers = 4) {
  const nlohmann::json j = {{"num_layers", layers}, {"hidden_size", 1024},        {"num_attention_heads", 8},
                            {"vocab_size", 1024},   {"seq_length", 1024},         {"num_moe_experts", 16},
                            {"moe_router_topk", 4}, {"moe_ffn_hidden_size", 8192}};
  return config::parse_model(j, "moe-overlap", "moe-overlap");
}

config::StrategyInput moe_strategy() {
  config::StrategyInput s;
  s.gpus = 16;
  s.ep = 16;
  s.global_batch_size = 16 * 8;  // 8 micro-batches a replica
  s.host_overhead_us = 0;        // GPU-bound, as under CUDA graphs: the host never holds a lane back
  return s;
}

double exposed_ep(const simulate::Outcome& out) { return out.result.communication.at("ep").exposed_s; }

}  // namespace

TEST_CASE("Combined 1F1B hides the all-to-alls of every paired forward and backward", "[simulate][moe]") {
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  config::StrategyInput s = moe_strategy();
  const auto plain = test::simulate(moe_model(), hw, s);
  s.overlap_moe_expert_parallel_comm = true;
  const auto combined = test::simulate(moe_model(), hw, s);
  REQUIRE(exposed_ep(plain) > 0.2 * plain.result.step_time_s);
  // Of the 8 forwards and 8 backwards only the first forward and the last
  // backward run alone (F0 | F1~B0 … F7~B6 | B7); in every pair one lane's
  // kernels run while the other waits for its exchange. They cannot make
  // the step shorter than its kernels back to back.
  CHECK(exposed_ep(combined) < 0.6 * exposed_ep(plain));
  CHECK(combined.result.step_time_s < plain.result.step_time_s - 0.25 * exposed_ep(plain));
  CHECK(combined.result.step_time_s > plain.result.breakdown.compute_s);
  // The same kernels and model work, run in another order.
  CHECK(combined.step.model_flops == Approx(plain.step.model_flops).epsilon(1e-12));
  CHECK(combined.result.communication.at("ep").bus_bytes ==
        Approx(plain.result.communication.at("ep").bus_bytes).epsilon(1e-12));
  // One stage: 1F1B holds one micro-batch's saved activations at its peak.
  // Combined 1F1B runs each pair's forward layer k beside the backward's
  // layer L−1−k, one pair after the other on one compute stream
  // (TransformerModelChunkSchedulePlan.run), so the forward keeps at most
  // one layer more than the backward has yet to free: its peak exceeds
  // 1F1B's by at most one layer's activations (a layer's: the slope between
  // two models of 4 and 2 such layers under 1F1B).
  const auto two_layers = test::simulate(moe_model(2), hw, moe_strategy());
  const double peak = static_cast<double>(plain.result.memory.activations_peak_bytes);
  const double per_layer = (peak - static_cast<double>(two_layers.result.memory.activations_peak_bytes)) / 2;
  REQUIRE(per_layer > 0);
  CHECK(static_cast<double>(combined.result.memory.activations_peak_bytes) >= peak);
  CHECK(static_cast<double>(combined.result.memory.activations_peak_bytes) <= peak + per_layer);
}

TEST_CASE("Combined 1F1B issues each layer pair node by node in Megatron-Core's order", "[simulate][moe]") {
  // TransformerLayerSchedulePlan.run (models/common/model_chunk_schedule_plan.py
  // at d98e8a64dd) issues a forward layer and a backward layer, on one
  // compute and one communication stream for both micro-batches:
  //   comm:    combine_bwd | dispatch_fwd -> dispatch_bwd | combine_fwd
  //   compute: pre_dispatch_fwd | mlp_bwd -> mlp_bwd_dw -> mlp_fwd | pre_dispatch_bwd
  // with delay_wgrad_compute's weight gradients of the pre-dispatch
  // computation after its backward. The expected order is read from there;
  // each node is named here by the first op of its block (ptsim issues the
  // combine node's unpermutation on the compute stream after the
  // pre-dispatch backward it would run beside, and the combine backward's
  // before its exchange).
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  config::StrategyInput s = moe_strategy();
  s.overlap_moe_expert_parallel_comm = true;
  s.delay_wgrad_compute = true;
  const auto out = test::simulate(moe_model(), hw, s);
  const taskgraph::Workload& w = out.step.workload;
  const taskgraph::Program& p = w.programs[0];
  const auto stream_of = [&](const std::string& name) {
    const auto it = std::find(w.stream_names.begin(), w.stream_names.end(), name);
    return static_cast<std::uint8_t>(it - w.stream_names.begin());
  };
  // Every kernel on one compute stream, every exchange on one stream.
  for (std::uint32_t b = 0; b < p.num_blocks(); ++b)
    for (taskgraph::TaskId t = 0; t < p.block(b).size(); ++t) {
      const taskgraph::Task& task = p.block(b).task(t);
      const std::string& name = w.op_names[task.name];
      INFO(name);
      if (task.kind == taskgraph::TaskKind::Compute) CHECK(task.stream == stream_of("compute"));
      if (name.find("moe.dispatch") != std::string::npos || name.find("moe.combine") != std::string::npos)
        CHECK(task.stream == stream_of("ep"));
    }
  // The steady-state pair of forward micro-batch 2 and backward micro-batch
  // 1 (one stage: F0 | F1~B0 | F2~B1 ...), at its second layer pair: the
  // forward's layer 1 beside the backward's layer 2.
  std::vector<std::string> issued;
  for (const taskgraph::BlockInstance& in : p.instances()) {
    const std::string first = w.op_names[p.block(in.block).task(0).name];
    const bool forward = in.microbatch == 2 && in.layer == 1 && first.rfind("fwd.", 0) == 0;
    const bool backward = in.microbatch == 1 && in.layer == 2 && first.rfind("bwd.", 0) == 0;
    if (forward || backward) issued.push_back((forward ? "F " : "B ") + first);
  }
  const std::vector<std::string> megatron = {
      "B bwd.mlp.bias_dropout_add.bwd",  // combine_bwd's kernels (mlp_bda, unpermutation) ...
      "B bwd.moe.combine.bwd",           // ... and its exchange
      "F fwd.ln1",                       // pre_dispatch_fwd: attention, norm, router, permutation
      "B bwd.moe.experts.fc2.dgrad",     // mlp_bwd
      "F fwd.moe.dispatch",              // dispatch_fwd
      "B bwd.moe.experts.fc2.wgrad",     // mlp_bwd_dw
      "B bwd.moe.dispatch.bwd",          // dispatch_bwd
      "F fwd.moe.experts.fc1",           // mlp_fwd
      "F fwd.moe.combine",               // combine_fwd's exchange
      "B bwd.moe.permute.bwd",           // pre_dispatch_bwd
      "F fwd.moe.unpermute",             // combine_fwd's kernels
      "B bwd.attn.proj.wgrad",           // pre_dispatch_bwd_dw
  };
  CHECK(issued == megatron);
}

TEST_CASE("Delayed expert weight gradients run beside the backward dispatch", "[simulate][moe]") {
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  config::StrategyInput s = moe_strategy();
  s.overlap_moe_expert_parallel_comm = true;
  const auto combined = test::simulate(moe_model(), hw, s);
  s.delay_wgrad_compute = true;
  const auto delayed = test::simulate(moe_model(), hw, s);
  CHECK(delayed.step.model_flops == Approx(combined.step.model_flops).epsilon(1e-12));
  // The last backward, which runs alone, now hides its dispatch under the
  // experts' weight gradients: never slower, and less exposed.
  CHECK(delayed.result.step_time_s <= combined.result.step_time_s * (1 + 1e-9));
  CHECK(exposed_ep(delayed) < exposed_ep(combined));
}

TEST_CASE("Interleaved combined 1F1B runs to completion and hides exchanges across stages", "[simulate][moe]") {
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  config::StrategyInput s = moe_strategy();
  s.gpus = 32;
  s.pp = 2;
  s.vpp = 2;
  s.overlap_p2p_comm = true;
  const auto plain = test::simulate(moe_model(), hw, s);
  s.overlap_moe_expert_parallel_comm = true;
  s.delay_wgrad_compute = true;
  const auto combined = test::simulate(moe_model(), hw, s);
  CHECK(combined.step.model_flops == Approx(plain.step.model_flops).epsilon(1e-12));
  CHECK(exposed_ep(combined) < 0.6 * exposed_ep(plain));
  CHECK(combined.result.step_time_s < plain.result.step_time_s);
}

TEST_CASE("EP communication overlap is refused where Megatron-Core refuses it", "[config][moe]") {
  const auto m = moe_model();
  const auto refused = [&](config::StrategyInput s, const std::string& words) {
    INFO(words);
    CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains(words));
  };
  config::StrategyInput s = moe_strategy();
  s.delay_wgrad_compute = true;
  refused(s, "needs --overlap-moe-expert-parallel-comm");
  s = moe_strategy();
  s.overlap_moe_expert_parallel_comm = true;
  s.gpus = 32;
  s.pp = 2;
  refused(s, "runs the interleaved schedule only");
  s = moe_strategy();
  s.overlap_moe_expert_parallel_comm = true;
  s.moe_token_dispatcher_type = "allgather";
  refused(s, "needs the alltoall or flex token dispatcher");
  s = moe_strategy();
  s.overlap_moe_expert_parallel_comm = true;
  s.recompute = "full";
  refused(s, "cannot be combined with full recomputation");
  s = moe_strategy();
  s.overlap_moe_expert_parallel_comm = true;
  s.ep = 1;
  refused(s, "needs expert parallelism");
}

TEST_CASE("Qwen3-30B-A3B fits on 8 GB300s at the micro-batch its MXFP8 recipe ran", "[simulate][moe][memory]") {
  // Megatron-Bridge's 26.08 performance table ran it so (docs/accuracy.md:
  // TP 1, EP 8, micro-batch 8 of 4,096 tokens, MXFP8 with FP8 attention,
  // HybridEP, EP overlap with delayed expert weight gradients, the
  // distributed optimizer). A configuration that ran must fit; before the
  // combined 1F1B kept its forward in step with the backward it needed
  // 277.6 GiB of the GB300's 277.5.
  config::StrategyInput s;
  s.gpus = 8;
  s.ep = 8;
  s.micro_batch_size = 8;
  s.global_batch_size = 512;
  s.seq_length = 4096;
  s.precision = "fp8";
  s.fp8_recipe = "mxfp8";
  s.fp8_dot_product_attention = true;
  s.moe_token_dispatcher_type = "flex";
  s.moe_flex_dispatcher_backend = "hybridep";
  s.overlap_moe_expert_parallel_comm = true;
  s.delay_wgrad_compute = true;
  s.distributed_optimizer = true;
  s.overlap_grad_reduce = true;
  s.overlap_param_gather = true;
  s.grad_reduce_in_bf16 = true;
  s.cross_entropy_loss_fusion = true;
  const auto out = test::simulate(test::shipped_model("qwen3-30b-a3b"), test::shipped_hardware("gb300-nvl72"), s);
  CHECK(out.result.memory.fits);
}

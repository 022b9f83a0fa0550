// Megatron-Core's CUDA graphs (--cuda-graph-impl, --cuda-graph-modules): what
// the host still issues, against counts worked out from the layer structure
// (one replay for each captured stretch of a layer and pass), and the rules
// Megatron-Core asserts.
#include <nlohmann/json.hpp>

#include "ptsim/common/error.hpp"
#include "ptsim/config/strategy_input.hpp"
#include "ptsim/workload/layer_ops.hpp"
#include "ptsim/workload/step_workload.hpp"
#include "simulate/pipeline_support.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

// The tiny GPT on one GPU, two micro-batches, 10 ms of host a task: a step
// of kernels far shorter than that is its issued tasks times 10 ms.
constexpr double kHostS = 10e-3;
constexpr std::int64_t kMicroBatches = 2;

config::StrategyInput host_bound() {
  config::StrategyInput s;
  s.gpus = 1;
  s.global_batch_size = kMicroBatches;
  s.micro_batch_size = 1;
  s.host_overhead_us = kHostS * 1e6;
  return s;
}

double step_s(const model::ModelSpec& m, const config::StrategyInput& s) {
  return test::simulate(m, test::shipped_hardware("h100-sxm5-80gb"), s).result.step_time_s;
}

// Tasks of the tiny GPT's step, and how many of them one layer issues for a
// micro-batch, forward and backward (from the step of twice the layers).
struct TaskCounts {
  double step, per_layer;
};

TaskCounts eager_counts(const model::ModelSpec& m) {
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  const auto one = test::simulate(m, hw, host_bound());
  auto deeper = m;
  deeper.num_layers *= 2;
  const auto two = test::simulate(deeper, hw, host_bound());
  const double per_layer =
      static_cast<double>(two.run.tasks - one.run.tasks) / static_cast<double>(m.num_layers * kMicroBatches);
  return {static_cast<double>(one.run.tasks), per_layer};
}

}  // namespace

TEST_CASE("Per-layer CUDA graphs leave the host one replay a layer and pass and the kernels they miss",
          "[simulate][host][cuda-graphs]") {
  const auto m = test::shipped_model("tiny");
  const TaskCounts eager = eager_counts(m);
  REQUIRE(eager.per_layer > 10);
  const double layer_passes = static_cast<double>(m.num_layers * kMicroBatches);
  // Whole layers: the forward and the backward of a layer are one replay each.
  auto s = host_bound();
  s.cuda_graph_impl = "local";
  const double whole = step_s(m, s);
  CHECK(whole == Approx((eager.step - layer_passes * (eager.per_layer - 2)) * kHostS).margin(2e-3));
  // Attention and MLP named: one graphed callable a layer captures both
  // (cuda_graphs.py _te_cuda_graph_capture runs _forward_attention, then
  // _forward_mlp), so a pass is still one replay.
  s.cuda_graph_impl = "transformer_engine";
  s.cuda_graph_modules = "attn,mlp";
  const double sublayers = step_s(m, s);
  CHECK(sublayers == Approx(whole).margin(2e-3));
  // The attention alone: its replay, and every MLP kernel as before.
  s.cuda_graph_modules = "attn";
  const double attention = step_s(m, s);
  CHECK(attention > sublayers + layer_passes * 2 * kHostS);
  CHECK(attention < eager.step * kHostS);
}

TEST_CASE("A full-iteration CUDA graph leaves the host the optimizer step and never a wait",
          "[simulate][host][cuda-graphs]") {
  // Four stages of 1F1B with Megatron-Core's synchronizing batched transfers:
  // eagerly the host waits after each; inside one graph it cannot.
  auto s = test::pipeline(4, 8, "1f1b");
  s.batch_p2p_sync = true;
  s.cuda_graph_impl = "full_iteration";
  const auto run = config::resolve_run(test::balanced_gpt(8), s);
  const auto step = workload::build_step_workload(run.model, run.parallel);
  for (std::size_t stage = 0; stage < 4; ++stage) {
    INFO("stage " << stage);
    const auto& program = step.workload.programs[step.workload.program_of_rank[stage]];
    std::int64_t eager = 0;
    for (taskgraph::TaskId t = 0; t < program.num_tasks(); ++t) {
      const auto& task = program.task(t);
      CHECK((task.flags & (taskgraph::kHostSync | taskgraph::kHostWaitsForTask)) == 0);
      if (task.host_issue == taskgraph::HostIssue::InGraph) continue;
      ++eager;
      CHECK(step.workload.op_names[task.name].rfind("optimizer", 0) == 0);
    }
    CHECK(eager >= 1);
  }
  // The host-bound tiny GPT: its step is now its optimizer's few tasks.
  const auto m = test::shipped_model("tiny");
  auto full = host_bound();
  full.cuda_graph_impl = "full_iteration";
  const double graphed = step_s(m, full);
  CHECK(graphed >= kHostS);
  CHECK(graphed < 5 * kHostS);
  CHECK(graphed < 0.05 * eager_counts(m).step * kHostS);
}

TEST_CASE("An MoE layer's router and preprocessing replay with its attention and its exchange and experts stay eager",
          "[simulate][host][cuda-graphs]") {
  const auto m = test::shipped_model("qwen3-30b-a3b");
  config::StrategyInput s;
  s.gpus = 8;
  s.ep = 8;
  s.global_batch_size = 8;
  s.cuda_graph_impl = "transformer_engine";
  s.cuda_graph_modules = "attn,moe_router,moe_preprocess";
  for (const char* dispatcher : {"alltoall", "flex"}) {
    INFO(dispatcher);
    s.moe_token_dispatcher_type = dispatcher;
    const auto run = config::resolve_run(m, s);
    const auto ops = workload::transformer_layer_ops(run.model, workload::micro_shape(run.model, run.parallel), 0);
    using taskgraph::HostIssue;
    // One graphed callable a layer (cuda_graphs.py _te_cuda_graph_capture):
    // attention, router and preprocessing run back to back, one replay.
    for (const auto* list : {&ops.forward, &ops.backward}) {
      std::int64_t launches = 0;
      for (const auto& op : *list) launches += op.host_issue == HostIssue::GraphLaunch;
      CHECK(launches == 1);
    }
    CHECK(test::op_named(ops.forward, "attn.qkv").host_issue == HostIssue::InGraph);
    CHECK(test::op_named(ops.forward, "moe.router").host_issue == HostIssue::InGraph);
    CHECK(test::op_named(ops.forward, "moe.dispatch").host_issue == HostIssue::Eager);
    CHECK(test::op_named(ops.forward, "moe.experts.fc1").host_issue == HostIssue::Eager);
    CHECK(test::op_named(ops.backward, "moe.router.dgrad").host_issue != HostIssue::Eager);
    // The all-to-all dispatcher permutes in preprocess(); flex in its exchange.
    CHECK((test::op_named(ops.forward, "moe.permute").host_issue == HostIssue::Eager) ==
          (std::string(dispatcher) == "flex"));
  }
}

TEST_CASE("CUDA graph settings Megatron-Core refuses are refused", "[simulate][cuda-graphs]") {
  const auto dense = test::shipped_model("tiny");
  const auto moe = test::shipped_model("qwen3-30b-a3b");
  const auto refused = [](const model::ModelSpec& m, config::StrategyInput s, const std::string& says) {
    INFO(says);
    CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains(says));
  };
  config::StrategyInput s;
  s.gpus = 8;
  s.global_batch_size = 8;
  s.cuda_graph_modules = "attn";
  refused(dense, s, "--cuda-graph-impl builds none");
  s.cuda_graph_impl = "full_iteration";
  refused(dense, s, "must be empty with --cuda-graph-impl full_iteration");
  s.cuda_graph_impl = "transformer_engine";
  s.cuda_graph_modules = "attn,everything";
  refused(dense, s, "everything is not a CUDA graph module");
  s.cuda_graph_modules = "moe_router";
  refused(dense, s, "has no experts");
  s.recompute = "full";
  s.cuda_graph_modules = "attn";
  refused(dense, s, "only with --cuda-graph-impl full_iteration");
  s.recompute.reset();
  s.ep = 8;
  s.cuda_graph_modules = "moe,moe_router";
  refused(moe, s, "both moe and moe_router");
  s.cuda_graph_modules = "attn,moe_preprocess";
  refused(moe, s, "without moe_router");
  s.cuda_graph_modules = "mlp";
  refused(moe, s, "every MLP of");
  s.cuda_graph_modules.reset();
  refused(moe, s, "captures whole MoE layers");
  s.cuda_graph_modules = "attn,moe";
  refused(moe, s, "captures whole MoE layers");
  // Dropping and padding to a capacity makes the whole layer capturable.
  s.moe_capacity_factor = 1.0;
  CHECK_NOTHROW(config::resolve_run(moe, s));
  s.cuda_graph_modules = "attn,moe_router,moe_preprocess";
  refused(moe, s, "copies to the host and synchronizes");
  // A strategy file's list holds names.
  CHECK_THROWS_WITH(config::parse_strategy(nlohmann::json{{"cuda_graph_modules", {3}}}, "s.json"),
                    Catch::Contains(
                        R"(3 is not a module name; expected a list of strings such as ["attn", "moe_router"])"));
  CHECK(
      config::parse_strategy(nlohmann::json{{"cuda_graph_modules", {"attn", "mamba"}}}, "s.json").cuda_graph_modules ==
      "attn,mamba");
  // The local implementation captures the router and the preprocessing together.
  s.moe_capacity_factor.reset();
  s.cuda_graph_impl = "local";
  s.cuda_graph_modules = "moe_router";
  CHECK(config::resolve_run(moe, s).parallel.cuda_graph_modules ==
        (strategy::kGraphMoeRouter | strategy::kGraphMoePreprocess));
}

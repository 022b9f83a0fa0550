// DeepSpeed 0.3's ZeRO-3 (--zero3-blocking) as its v0.3.15 source runs it,
// against hand counts: which tensors each layer's pass gathers (persistent
// tensors stay gathered; recomputation releases and gathers again), the
// once-a-step gather of the persistent ones, and the Python operations the
// host runs for each collective's list of per-rank views.
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "ptsim/config/load_model.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "ptsim/cost/cost_model.hpp"
#include "ptsim/taskgraph/task.hpp"
#include "ptsim/workload/step_workload.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

// A GPT of `layers` layers of hidden size h (4h MLP, LayerNorm, biases), a
// vocabulary of 128 and 512 tokens.
model::ModelSpec gpt(std::int64_t layers, std::int64_t h) {
  const nlohmann::json j = {{"num_layers", layers},
                            {"hidden_size", h},
                            {"num_attention_heads", 16},
                            {"vocab_size", 128},
                            {"seq_length", 512}};
  return config::parse_model(j, "gpt", "gpt");
}

workload::StepWorkload deepspeed_step(const model::ModelSpec& m, std::int64_t ranks, bool recompute) {
  config::StrategyInput s;
  s.gpus = ranks;
  s.global_batch_size = ranks;
  s.zero = 3;
  s.grad_reduce_in_bf16 = true;
  s.zero3_blocking = true;
  if (recompute) s.recompute = "full";
  const auto run = config::resolve_run(m, s);
  return workload::build_step_workload(run.model, run.parallel);
}

struct Tally {
  double calls = 0, bytes = 0, host_ops = 0;
  std::uint8_t flags = 0;  // of the last one
};

// Every instance, on the one stage, of the tasks named `name`.
Tally tally(const workload::StepWorkload& step, const std::string& name) {
  const auto& program = step.workload.programs[0];
  Tally t;
  for (const auto& instance : program.instances()) {
    const auto& block = program.block(instance.block);
    for (taskgraph::TaskId i = 0; i < block.size(); ++i) {
      const auto& task = block.task(i);
      if (step.workload.op_names[task.name] != name) continue;
      t.calls += 1;
      t.bytes += static_cast<double>(task.bytes);
      t.host_ops += task.host_ops;
      t.flags = task.flags;
    }
  }
  return t;
}

}  // namespace

TEST_CASE("DeepSpeed 0.3's ZeRO-3 gathers a layer's weights and keeps its small tensors", "[workload][zero]") {
  // Hidden 1024: each layer's LayerNorm weights and biases (1024 each, two
  // norms), QKV bias (3072), projection bias (1024), fc1 bias (4096) and fc2
  // bias (1024) are under DeepSpeed's persistence threshold of 100,000
  // elements: 13,312 elements a layer that stay gathered. Its four weights
  // (3·1024², 1024², 4·1024², 4·1024², 12·1024² elements) are gathered
  // before each layer's forward and backward, one tensor at a time.
  const std::int64_t layers = 8, ranks = 64;
  const auto step = deepspeed_step(gpt(layers, 1024), ranks, false);
  const double weights = 12.0 * 1024 * 1024, kept = 13312;
  const Tally gathers = tally(step, "zero3.param_allgather");
  CHECK(gathers.calls == 2 * layers * 4);
  CHECK(gathers.bytes == Approx(2 * layers * 2 * weights));
  // _allgather_param: one narrow view a rank, built in Python after a
  // device-wide synchronize (the zeroing kernel before it carries the host
  // synchronization), and the host waits for the gather before the module.
  CHECK(gathers.host_ops == gathers.calls * ranks);
  CHECK((gathers.flags & taskgraph::kTensorList) != 0);
  CHECK((gathers.flags & taskgraph::kHostWaitsForTask) != 0);
  const Tally zeros = tally(step, "zero3.gather_buffer_zeros");
  CHECK(zeros.calls == gathers.calls);
  CHECK(zeros.bytes == Approx(gathers.bytes));
  CHECK((zeros.flags & taskgraph::kHostSync) != 0);
  CHECK(tally(step, "zero3.own_shard_copy").bytes == Approx(2 * gathers.bytes / ranks));
  // Every one of a layer's 12 gradients is reduce-scattered over a list of
  // one view of it a rank, each a view and a narrow in Python
  // (_reduce_scatter_gradient): 24 operations a rank and layer.
  const Tally scatters = tally(step, "zero3.grad_reducescatter");
  CHECK(scatters.host_ops == Approx((12 * layers + 2) * 2 * ranks));  // and the embedding's and output layer's
  // After the optimizer: the kept tensors gathered once (one view a rank),
  // then copied out of the buffer tensor by tensor and rank by rank (narrow,
  // view, narrow, copy_): 4 · 8 tensors · layers · ranks operations.
  const Tally again = tally(step, "zero3.persistent_param_allgather");
  CHECK(again.calls == 1);
  CHECK(again.bytes == Approx(2 * layers * kept));
  CHECK(again.host_ops == ranks);
  const Tally copy_out = tally(step, "zero3.persistent_copy_out");
  CHECK(copy_out.host_ops == 4 * 8 * layers * ranks);
  CHECK(copy_out.bytes == Approx(4 * layers * kept));
  // Each module fetch formats every one of its parameters' norms into a
  // debug line it does not print: a norm kernel reading the parameter and
  // the host waiting for the value, 12 a layer, forward and backward.
  const Tally norms = tally(step, "zero3.fetch_param_norm");
  CHECK(norms.calls == 2 * layers * 12);
  CHECK(norms.bytes == Approx(2 * layers * 2 * (weights + kept)));
  CHECK((norms.flags & taskgraph::kHostWaitsForTask) != 0);
}

TEST_CASE("DeepSpeed 0.3 gathers again what a recomputed forward released", "[workload][zero]") {
  // After a layer's recomputed forward each module is released unless fewer
  // than 1e9 parameter elements run before its backward: the rest of the
  // recomputed forward and their backward, twice the elements of the
  // modules after it. fc2 is next at once and stays. With hidden h the
  // weights after fc1 are fc2's 4h², after the projection fc1's and fc2's
  // 8h² (and a norm's 2h), after QKV also the projection's h².
  const auto regathered = [](std::int64_t h) {
    const std::int64_t layers = 2;
    const auto step = deepspeed_step(gpt(layers, h), 8, true);
    // The recomputed forward's hooks and the backward's both fetch: each
    // formats the 12 parameters' norms.
    CHECK(tally(step, "zero3.fetch_param_norm").calls == 3 * layers * 12);
    return tally(step, "zero3.param_allgather").calls - 2 * layers * 4;
  };
  // h 4096: the farthest, after the first norm, 2·12·4096² = 0.40e9 < 1e9: nothing again.
  CHECK(regathered(4096) == 0);
  // h 8192: after fc1 2·4·8192² = 0.54e9 stays; after the projection
  // 2·8·8192² = 1.07e9 and after QKV 2·9·8192² = 1.21e9 go: two a layer.
  CHECK(regathered(8192) == 2 * 2);
  // h 12288 (GPT-3 175B's): after fc1 2·4·12288² = 1.21e9 goes too: three.
  CHECK(regathered(12288) == 3 * 2);
}

TEST_CASE("A task's Python operations cost its host their own time", "[cost][host]") {
  // pytorch/pytorch#41383: a small op from Python is about 2 µs.
  CHECK(cost::kPythonTensorOpS == 2e-6);
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");  // the cluster keeps a reference to it
  const hardware::Cluster cluster(hw, 8);
  const cost::CostModel model(cluster, cost::HostIssue{5e-6});
  taskgraph::Task task;
  CHECK(model.host_issue(task).seconds() == Approx(5e-6));
  task.host_ops = 1536;
  CHECK(model.host_issue(task).seconds() == Approx(5e-6 + 1536 * 2e-6));
  const cost::CostModel none(cluster, cost::HostIssue{5e-6, 0});
  CHECK(none.host_issue(task).seconds() == Approx(5e-6));
}

// Flattening of a TaskGraph for the simulation loop (see compiled_program.hpp).
#include "internal/compiled_program.hpp"

#include <fmt/format.h>

#include "ptsim/common/error.hpp"

namespace ptsim::engine::internal {

namespace {

// Kahn's algorithm on the flattened graph (cheaper than on Boost's lists).
void check_acyclic(const CompiledProgram& p) {
  const std::size_t n = p.tasks.size();
  std::vector<std::uint32_t> pending(n);
  std::vector<taskgraph::TaskId> ready;
  for (taskgraph::TaskId t = 0; t < n; ++t) {
    pending[t] = p.pred_begin[t + 1] - p.pred_begin[t];
    if (pending[t] == 0) ready.push_back(t);
  }
  std::size_t peeled = 0;
  while (!ready.empty()) {
    const taskgraph::TaskId t = ready.back();
    ready.pop_back();
    ++peeled;
    for (std::uint32_t i = p.succ_begin[t]; i < p.succ_begin[t + 1]; ++i)
      if (--pending[p.succs[i]] == 0) ready.push_back(p.succs[i]);
  }
  if (peeled == n) return;
  taskgraph::TaskId stuck = 0;
  while (pending[stuck] == 0) ++stuck;
  throw SimulationError(fmt::format(
      "task graph has a cycle: {} of {} tasks can never start, the first is task {} "
      "(name index {}, micro-batch {}, layer {})",
      n - peeled, n, stuck, p.tasks[stuck].name, p.tasks[stuck].microbatch, p.tasks[stuck].layer));
}

}  // namespace

CompiledProgram compile_program(const taskgraph::TaskGraph& graph, std::size_t num_streams,
                                std::size_t num_slots, const cost::CostModel& cost) {
  CompiledProgram p;
  const std::size_t n = graph.size();
  p.tasks.reserve(n);
  p.compute_duration.resize(n);
  p.position.resize(n);
  p.stream_tasks.resize(num_streams);
  p.uses_slot.assign(num_slots, false);
  std::vector<int> stream_of_slot(num_slots, -1);
  p.pred_begin.reserve(n + 1);
  p.succ_begin.reserve(n + 1);
  for (taskgraph::TaskId t = 0; t < n; ++t) {
    const taskgraph::Task& task = graph.task(t);
    if (task.stream >= num_streams)
      throw SimulationError(fmt::format("task {} names stream {}, but the workload has {} streams",
                                        t, task.stream, num_streams));
    p.tasks.push_back(task);
    if (task.kind == taskgraph::TaskKind::Compute) {
      p.compute_duration[t] = cost.compute_duration(task);
    } else {
      // All operations on one communicator slot share a stream, so a rank's
      // operations on a communicator run one after the other, as NCCL needs.
      if (task.comm_slot >= num_slots)
        throw SimulationError(fmt::format("task {} names communicator slot {}, but the workload "
                                          "has {} slots", t, task.comm_slot, num_slots));
      int& owner = stream_of_slot[task.comm_slot];
      if (owner >= 0 && owner != task.stream)
        throw SimulationError(fmt::format("communicator slot {} is used from streams {} and {}; "
                                          "one slot must stay on one stream",
                                          task.comm_slot, owner, task.stream));
      owner = task.stream;
      p.uses_slot[task.comm_slot] = true;
    }
    auto& stream = p.stream_tasks[task.stream];
    p.position[t] = static_cast<std::uint32_t>(stream.size());
    stream.push_back(t);
    p.pred_begin.push_back(static_cast<std::uint32_t>(p.preds.size()));
    graph.for_each_predecessor(t, [&](taskgraph::TaskId pred) { p.preds.push_back(pred); });
    p.succ_begin.push_back(static_cast<std::uint32_t>(p.succs.size()));
    graph.for_each_successor(t, [&](taskgraph::TaskId succ) { p.succs.push_back(succ); });
  }
  p.pred_begin.push_back(static_cast<std::uint32_t>(p.preds.size()));
  p.succ_begin.push_back(static_cast<std::uint32_t>(p.succs.size()));
  check_acyclic(p);
  return p;
}

}  // namespace ptsim::engine::internal

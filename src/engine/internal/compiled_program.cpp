// Flattening of a Program for the simulation loop (see compiled_program.hpp).
#include "internal/compiled_program.hpp"

#include <fmt/format.h>

#include "ptsim/common/error.hpp"

namespace ptsim::engine::internal {

namespace {

// Kahn's algorithm on a flattened block. Links between instances always run
// forward, so acyclic blocks make an acyclic program.
void check_acyclic(const CompiledBlock& b, std::uint32_t block_id) {
  const std::size_t n = b.tasks.size();
  std::vector<std::uint32_t> pending(n);
  std::vector<TaskId> ready;
  for (TaskId t = 0; t < n; ++t) {
    pending[t] = b.pred_begin[t + 1] - b.pred_begin[t];
    if (pending[t] == 0) ready.push_back(t);
  }
  std::size_t peeled = 0;
  while (!ready.empty()) {
    const TaskId t = ready.back();
    ready.pop_back();
    ++peeled;
    for (std::uint32_t i = b.succ_begin[t]; i < b.succ_begin[t + 1]; ++i)
      if (--pending[b.succs[i]] == 0) ready.push_back(b.succs[i]);
  }
  if (peeled == n) return;
  TaskId stuck = 0;
  while (pending[stuck] == 0) ++stuck;
  throw SimulationError(fmt::format(
      "task graph has a cycle: {} of {} tasks of block {} can never start, the first is task {} "
      "(name index {})",
      n - peeled, n, block_id, stuck, b.tasks[stuck].name));
}

CompiledBlock compile_block(const taskgraph::TaskGraph& graph, std::uint32_t id,
                            std::size_t num_streams, std::size_t num_slots,
                            const cost::CostModel& cost, std::vector<int>& stream_of_slot,
                            std::vector<bool>& uses_slot) {
  CompiledBlock b;
  const std::size_t n = graph.size();
  b.tasks.reserve(n);
  b.compute_duration.resize(n);
  b.position.resize(n);
  b.stream_tasks.resize(num_streams);
  for (TaskId t = 0; t < n; ++t) {
    const taskgraph::Task& task = graph.task(t);
    if (task.stream >= num_streams)
      throw SimulationError(fmt::format("task {} of block {} names stream {}, but the workload has "
                                        "{} streams", t, id, task.stream, num_streams));
    b.tasks.push_back(task);
    if (task.kind == taskgraph::TaskKind::Compute) {
      b.compute_duration[t] = cost.compute_duration(task);
    } else {
      // All operations on one communicator slot share a stream, so a rank's
      // operations on a communicator run one after the other, as NCCL needs.
      if (task.comm_slot >= num_slots)
        throw SimulationError(fmt::format("task {} of block {} names communicator slot {}, but the "
                                          "workload has {} slots", t, id, task.comm_slot, num_slots));
      int& owner = stream_of_slot[task.comm_slot];
      if (owner >= 0 && owner != task.stream)
        throw SimulationError(fmt::format("communicator slot {} is used from streams {} and {}; "
                                          "one slot must stay on one stream",
                                          task.comm_slot, owner, task.stream));
      owner = task.stream;
      uses_slot[task.comm_slot] = true;
    }
    auto& stream = b.stream_tasks[task.stream];
    b.position[t] = static_cast<std::uint32_t>(stream.size());
    stream.push_back(t);
    b.pred_begin.push_back(static_cast<std::uint32_t>(b.preds.size()));
    graph.for_each_predecessor(t, [&](TaskId pred) { b.preds.push_back(pred); });
    b.succ_begin.push_back(static_cast<std::uint32_t>(b.succs.size()));
    graph.for_each_successor(t, [&](TaskId succ) { b.succs.push_back(succ); });
  }
  b.pred_begin.push_back(static_cast<std::uint32_t>(b.preds.size()));
  b.succ_begin.push_back(static_cast<std::uint32_t>(b.succs.size()));
  check_acyclic(b, id);
  return b;
}

}  // namespace

CompiledProgram compile_program(const taskgraph::Program& program, std::size_t num_streams,
                                std::size_t num_slots, const cost::CostModel& cost) {
  CompiledProgram p;
  p.uses_slot.assign(num_slots, false);
  std::vector<int> stream_of_slot(num_slots, -1);
  for (std::uint32_t b = 0; b < program.num_blocks(); ++b)
    p.blocks.push_back(compile_block(program.block(b), b, num_streams, num_slots, cost,
                                     stream_of_slot, p.uses_slot));

  const auto& instances = program.instances();
  const auto n = static_cast<std::uint32_t>(instances.size());
  p.instance_block.reserve(n);
  p.offset.reserve(n + 1);
  p.stream_instances.resize(num_streams);
  p.instance_of.resize(program.num_tasks());
  for (std::uint32_t i = 0; i < n; ++i) {
    p.instance_block.push_back(instances[i].block);
    p.offset.push_back(program.offset(i));
    const CompiledBlock& b = p.blocks[instances[i].block];
    std::fill(p.instance_of.begin() + program.offset(i),
              p.instance_of.begin() + program.offset(i) + static_cast<TaskId>(b.tasks.size()), i);
    for (std::size_t s = 0; s < num_streams; ++s)
      if (!b.stream_tasks[s].empty()) p.stream_instances[s].push_back(i);
  }
  p.offset.push_back(static_cast<TaskId>(program.num_tasks()));

  // Links, grouped by the instance at each end (counting sort).
  std::vector<std::uint32_t> preds(n + 1, 0), succs(n + 1, 0);
  for (const auto& link : program.links()) {
    ++preds[link.after.instance + 1];
    ++succs[link.before.instance + 1];
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    preds[i + 1] += preds[i];
    succs[i + 1] += succs[i];
  }
  p.cross_pred_begin = preds;
  p.cross_succ_begin = succs;
  p.cross_preds.resize(program.links().size());
  p.cross_succs.resize(program.links().size());
  for (const auto& link : program.links()) {
    p.cross_preds[preds[link.after.instance]++] = {link.after.task, program.global(link.before)};
    p.cross_succs[succs[link.before.instance]++] = {link.before.task, program.global(link.after)};
  }
  return p;
}

}  // namespace ptsim::engine::internal

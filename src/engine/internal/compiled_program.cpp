// Flattening of a Program for the simulation loop (see compiled_program.hpp).
#include "internal/compiled_program.hpp"

#include <fmt/format.h>

#include <algorithm>

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

std::uint32_t CompiledProgram::instance_of(TaskId global) const {
  const auto after = std::upper_bound(offset.begin(), offset.end(), global);
  return static_cast<std::uint32_t>(after - offset.begin() - 1);
}

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
  const std::size_t total = program.num_tasks();
  p.instance_block.reserve(n);
  p.offset.reserve(n + 1);
  p.entries.resize(total + 1);
  p.stream_order.resize(num_streams);
  {
    std::vector<std::size_t> per_stream(num_streams, 0);
    for (std::uint32_t i = 0; i < n; ++i)
      for (std::size_t s = 0; s < num_streams; ++s) per_stream[s] += p.blocks[instances[i].block].stream_tasks[s].size();
    for (std::size_t s = 0; s < num_streams; ++s) p.stream_order[s].reserve(per_stream[s]);
  }
  // Dependency counts per global task: the block's own, then the links.
  std::vector<std::uint32_t> preds(total + 1, 0), succs(total + 1, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    p.instance_block.push_back(instances[i].block);
    const TaskId base = program.offset(i);
    p.offset.push_back(base);
    const CompiledBlock& b = p.blocks[instances[i].block];
    for (TaskId t = 0; t < b.tasks.size(); ++t) {
      p.entries[base + t].task = &b.tasks[t];
      p.entries[base + t].duration_ns = b.compute_duration[t].ns();
      preds[base + t + 1] = b.pred_begin[t + 1] - b.pred_begin[t];
      succs[base + t + 1] = b.succ_begin[t + 1] - b.succ_begin[t];
    }
    for (std::size_t s = 0; s < num_streams; ++s)
      for (const TaskId t : b.stream_tasks[s]) p.stream_order[s].push_back(base + t);
  }

  p.offset.push_back(static_cast<TaskId>(total));
  for (const auto& link : program.links()) {
    ++preds[program.global(link.after) + 1];
    ++succs[program.global(link.before) + 1];
  }
  for (std::size_t t = 0; t < total; ++t) {
    preds[t + 1] += preds[t];
    succs[t + 1] += succs[t];
  }
  for (std::size_t t = 0; t <= total; ++t) {
    p.entries[t].pred_begin = preds[t];
    p.entries[t].succ_begin = succs[t];
  }
  p.preds.resize(preds[total]);
  p.succs.resize(succs[total]);
  // preds/succs now serve as fill cursors.
  for (std::uint32_t i = 0; i < n; ++i) {
    const TaskId base = program.offset(i);
    const CompiledBlock& b = p.blocks[instances[i].block];
    for (TaskId t = 0; t < b.tasks.size(); ++t) {
      for (std::uint32_t k = b.pred_begin[t]; k < b.pred_begin[t + 1]; ++k) p.preds[preds[base + t]++] = base + b.preds[k];
      for (std::uint32_t k = b.succ_begin[t]; k < b.succ_begin[t + 1]; ++k) p.succs[succs[base + t]++] = base + b.succs[k];
    }
  }
  for (const auto& link : program.links()) {
    const TaskId before = program.global(link.before), after = program.global(link.after);
    p.preds[preds[after]++] = before;
    p.succs[succs[before]++] = after;
  }
  return p;
}

}  // namespace ptsim::engine::internal

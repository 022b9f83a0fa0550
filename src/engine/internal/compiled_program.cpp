// Flattening of a Program for the simulation loop (see compiled_program.hpp).
#include "internal/compiled_program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

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
  b.host_prefix_ns.resize(n);
  b.stream_tasks.resize(num_streams);
  for (TaskId t = 0; t < n; ++t) {
    const taskgraph::Task& task = graph.task(t);
    if (task.stream >= num_streams)
      throw SimulationError(fmt::format("task {} of block {} names stream {}, but the workload has "
                                        "{} streams", t, id, task.stream, num_streams));
    b.tasks.push_back(task);
    b.host_total_ns += cost.host_issue(task).ns();
    b.host_prefix_ns[t] = b.host_total_ns;
    if (task.flags & (taskgraph::kHostSync | taskgraph::kHostWaitsForTask)) b.host_sync_tasks.push_back(t);
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
  for (std::size_t s = 0; s < num_streams; ++s)
    if (!b.stream_tasks[s].empty()) b.used_streams.push_back(static_cast<std::uint8_t>(s));
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

  // Templates, block after block (the blocks are complete: pointers into
  // them stay valid).
  p.first_template.resize(p.blocks.size());
  for (std::size_t b = 0; b < p.blocks.size(); ++b) {
    const CompiledBlock& block = p.blocks[b];
    p.first_template[b] = static_cast<std::uint32_t>(p.templates.size());
    for (std::uint32_t t = 0; t < block.tasks.size(); ++t)
      p.templates.push_back({&block.tasks[t], block.preds.data() + block.pred_begin[t],
                             block.succs.data() + block.succ_begin[t], block.compute_duration[t].ns(),
                             block.host_prefix_ns[t], t,
                             block.pred_begin[t + 1] - block.pred_begin[t],
                             block.succ_begin[t + 1] - block.succ_begin[t], block.tasks[t].stream,
                             block.tasks[t].kind});
  }
  p.block_stream_tasks.resize(p.blocks.size() * num_streams);
  for (std::size_t b = 0; b < p.blocks.size(); ++b)
    for (const std::uint8_t s : p.blocks[b].used_streams) {
      const auto& list = p.blocks[b].stream_tasks[s];
      p.block_stream_tasks[b * num_streams + s] = {list.data(), list.data() + list.size()};
    }

  // Per instance its block and first id; per stream the instances on it.
  std::vector<std::size_t> per_stream(num_streams, 0);
  for (const auto& instance : instances)
    for (const std::uint8_t s : p.blocks[instance.block].used_streams) ++per_stream[s];
  p.instance_block.reserve(n);
  p.offset.reserve(n + 1);
  p.stream_instances.resize(num_streams);
  for (std::size_t s = 0; s < num_streams; ++s) p.stream_instances[s].reserve(per_stream[s]);
  std::size_t next = 0;  // the first id of instance i, as the instances before it add up
  std::int64_t host = 0;  // the host time to issue the instances before i
  std::vector<std::vector<std::int64_t>> host_base(num_streams);
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t block = instances[i].block;
    const TaskId base = program.offset(i);
    next += p.blocks[block].tasks.size();
    PTSIM_ASSERT(base + p.blocks[block].tasks.size() == next && next <= total, "instances number the tasks in order");
    p.instance_block.push_back(block);
    p.offset.push_back(base);
    for (const std::uint8_t s : p.blocks[block].used_streams) {
      p.stream_instances[s].push_back({base, block});
      host_base[s].push_back(host);
    }
    for (const std::uint32_t t : p.blocks[block].host_sync_tasks)
      p.host_syncs.push_back({base + t, host + p.blocks[block].host_prefix_ns[t],
                              (p.blocks[block].tasks[t].flags & taskgraph::kHostSync) != 0});
    host += p.blocks[block].host_total_ns;
  }
  PTSIM_ASSERT(next == total, "the instances hold every task");
  p.offset.push_back(static_cast<TaskId>(total));
  p.host_issue = host > 0 || !p.host_syncs.empty();
  if (p.host_issue) p.stream_instance_host_ns = std::move(host_base);

  // Links between instances, as (global task, other end, its stream) sorted
  // by the first; a stable sort keeps each task's links in program order.
  const auto& links = program.links();
  p.link_preds.resize(links.size());
  p.link_succs.resize(links.size());
  p.linked.assign((total + 63) / 64, 0);
  // A link names its ends by instance: their templates need no search.
  const auto stream_of = [&](const taskgraph::TaskRef& ref) { return p.template_of(ref.instance, ref.task).stream; };
  for (std::size_t k = 0; k < links.size(); ++k) {
    const TaskId before = program.global(links[k].before), after = program.global(links[k].after);
    PTSIM_ASSERT(before < total && after < total, "links join tasks of the program");
    p.link_preds[k] = {after, before, stream_of(links[k].before)};
    p.link_succs[k] = {before, after, stream_of(links[k].after)};
    for (const TaskId t : {before, after}) p.linked[t >> 6] |= std::uint64_t{1} << (t & 63);
  }
  const auto by_task = [](const CompiledProgram::Link& a, const CompiledProgram::Link& b) { return a.task < b.task; };
  std::stable_sort(p.link_preds.begin(), p.link_preds.end(), by_task);
  std::stable_sort(p.link_succs.begin(), p.link_succs.end(), by_task);
  return p;
}

}  // namespace ptsim::engine::internal

// CompiledProgram: a Program flattened for the simulation loop — every
// compute task's duration asked of the cost model once per block (not per
// instance), then per global task its template, duration and dependencies
// (links between instances included) in flat arrays, and each stream's issue
// order as one array of global ids. Private to engine/.
#pragma once

#include <cstdint>
#include <vector>

#include "ptsim/common/time.hpp"
#include "ptsim/cost/cost_model.hpp"
#include "ptsim/taskgraph/program.hpp"

namespace ptsim::engine::internal {

using taskgraph::TaskId;

struct CompiledBlock {
  std::vector<taskgraph::Task> tasks;
  std::vector<Time> compute_duration;  // per task; zero for communication tasks
  std::vector<std::uint32_t> pred_begin, preds;  // local ids
  std::vector<std::uint32_t> succ_begin, succs;
  std::vector<std::vector<TaskId>> stream_tasks;  // issue order per stream, local ids
};

/// Flat, per global task: what the simulation loop reads on every event,
/// one index away. Blocks keep the task templates; instances number them.
struct CompiledProgram {
  std::vector<CompiledBlock> blocks;
  std::vector<std::uint32_t> instance_block;
  std::vector<TaskId> offset;              // per instance; back() = number of tasks
  // Per global task, plus one sentinel: what each event reads together in
  // one cache line — the template, the duration and where its dependencies
  // start (links between instances included; a task's successors list its
  // block's first, then links in program order).
  struct Entry {
    const taskgraph::Task* task = nullptr;  // into blocks; null for the sentinel
    std::int64_t duration_ns = 0;           // zero for communication
    std::uint32_t pred_begin = 0;
    std::uint32_t succ_begin = 0;
  };
  std::vector<Entry> entries;
  std::vector<std::uint32_t> preds, succs;
  std::vector<std::vector<TaskId>> stream_order;  // per stream: its tasks in issue order
  std::vector<bool> uses_slot;  // communicator slots some task of the program uses

  std::size_t num_tasks() const { return offset.back(); }
  /// The instance a global task belongs to (a binary search: only error
  /// messages ask).
  std::uint32_t instance_of(TaskId global) const;
  const taskgraph::Task& task(TaskId global) const { return *entries[global].task; }
  std::int64_t duration_ns(TaskId global) const { return entries[global].duration_ns; }

  /// Calls f(global id) for every task `global` waits for.
  template <typename F>
  void for_each_pred(TaskId global, F&& f) const {
    for (std::uint32_t k = entries[global].pred_begin; k < entries[global + 1].pred_begin; ++k) f(preds[k]);
  }
  /// Calls f(global id) for every task that waits for `global`.
  template <typename F>
  void for_each_succ(TaskId global, F&& f) const {
    for (std::uint32_t k = entries[global].succ_begin; k < entries[global + 1].succ_begin; ++k) f(succs[k]);
  }
};

/// Flattens `program`; streams are numbered below num_streams. Throws
/// SimulationError when a block has a cycle or a stream or slot index is out of range.
CompiledProgram compile_program(const taskgraph::Program& program, std::size_t num_streams,
                                std::size_t num_slots, const cost::CostModel& cost);

}  // namespace ptsim::engine::internal

// CompiledProgram: a Program flattened for the simulation loop — each block's
// tasks in a contiguous array with CSR dependencies, each stream's issue
// order, every compute task's duration asked of the cost model once per
// block (not per instance), and the links between instances indexed by
// instance. Private to engine/.
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
  std::vector<std::uint32_t> position;            // index of each task within its stream
};

/// One end of a link seen from an instance: its own task and the other end.
struct CrossLink {
  TaskId local = 0;   // the task of this instance
  TaskId global = 0;  // the task at the other end
};

struct CompiledProgram {
  std::vector<CompiledBlock> blocks;
  std::vector<std::uint32_t> instance_block;
  std::vector<TaskId> offset;               // per instance; back() = number of tasks
  std::vector<std::uint32_t> instance_of;   // per global task
  std::vector<std::uint32_t> cross_pred_begin;  // per instance, into cross_preds
  std::vector<CrossLink> cross_preds;           // (task here, task it waits for)
  std::vector<std::uint32_t> cross_succ_begin;
  std::vector<CrossLink> cross_succs;           // (task here, task waiting for it)
  std::vector<std::vector<std::uint32_t>> stream_instances;  // instances with tasks on each stream
  std::vector<bool> uses_slot;  // communicator slots some task of the program uses

  std::size_t num_tasks() const { return offset.back(); }
  const CompiledBlock& block_of(TaskId global) const { return blocks[instance_block[instance_of[global]]]; }
  TaskId local(TaskId global) const { return global - offset[instance_of[global]]; }
  const taskgraph::Task& task(TaskId global) const { return block_of(global).tasks[local(global)]; }

  /// Calls f(global id) for every task `global` waits for.
  template <typename F>
  void for_each_pred(TaskId global, F&& f) const {
    const std::uint32_t i = instance_of[global];
    const CompiledBlock& b = blocks[instance_block[i]];
    const TaskId t = global - offset[i];
    for (std::uint32_t k = b.pred_begin[t]; k < b.pred_begin[t + 1]; ++k) f(offset[i] + b.preds[k]);
    for (std::uint32_t k = cross_pred_begin[i]; k < cross_pred_begin[i + 1]; ++k)
      if (cross_preds[k].local == t) f(cross_preds[k].global);
  }
  /// Calls f(global id) for every task that waits for `global`.
  template <typename F>
  void for_each_succ(TaskId global, F&& f) const {
    const std::uint32_t i = instance_of[global];
    const CompiledBlock& b = blocks[instance_block[i]];
    const TaskId t = global - offset[i];
    for (std::uint32_t k = b.succ_begin[t]; k < b.succ_begin[t + 1]; ++k) f(offset[i] + b.succs[k]);
    for (std::uint32_t k = cross_succ_begin[i]; k < cross_succ_begin[i + 1]; ++k)
      if (cross_succs[k].local == t) f(cross_succs[k].global);
  }
};

/// Flattens `program`; streams are numbered below num_streams. Throws
/// SimulationError when a block has a cycle or a stream or slot index is out of range.
CompiledProgram compile_program(const taskgraph::Program& program, std::size_t num_streams,
                                std::size_t num_slots, const cost::CostModel& cost);

}  // namespace ptsim::engine::internal

// CompiledProgram: a Program flattened for the simulation loop — every
// compute task's duration asked of the cost model once per block (not per
// instance), then per global task its template, duration and dependencies
// (links between instances included) in flat arrays, and per stream the
// instances that issue tasks on it. Private to engine/.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "ptsim/common/time.hpp"
#include "ptsim/cost/cost_model.hpp"
#include "ptsim/taskgraph/program.hpp"

namespace ptsim::engine::internal {

using taskgraph::TaskId;

/// A fixed-size array whose elements stay uninitialised until written:
/// compiling writes each element once, in order, and zeroing the fresh memory
/// first (as std::vector does) would touch every page twice.
template <typename T>
class FixedArray {
 public:
  FixedArray() = default;
  explicit FixedArray(std::size_t n) : data_(std::make_unique_for_overwrite<T[]>(n)), size_(n) {}
  std::size_t size() const { return size_; }
  T* data() { return data_.get(); }
  const T& operator[](std::size_t i) const { return data_[i]; }
  const T* begin() const { return data_.get(); }
  const T* end() const { return data_.get() + size_; }

 private:
  std::unique_ptr<T[]> data_;
  std::size_t size_ = 0;
};

struct CompiledBlock {
  std::vector<taskgraph::Task> tasks;
  std::vector<Time> compute_duration;  // per task; zero for communication tasks
  std::vector<std::uint32_t> pred_begin, preds;  // local ids
  std::vector<std::uint32_t> succ_begin, succs;
  std::vector<std::vector<TaskId>> stream_tasks;  // issue order per stream, local ids
  std::vector<std::uint8_t> used_streams;  // the streams with tasks, ascending (a block uses one or two of 18)
};

/// What the simulation loop reads on every event, one or two indexes away:
/// per block task a template (the task, its duration, its dependencies inside
/// its block), and per global task only its template and its links to other
/// instances. Four bytes per task, and four for its place in its stream's
/// order: the memory a run touches first costs a page fault per 4 KiB (about
/// 1.3 µs on the 2-core machine), so per-task copies of block data cost more
/// to create than they save.
struct CompiledProgram {
  std::vector<CompiledBlock> blocks;
  std::vector<std::uint32_t> instance_block;
  std::vector<TaskId> offset;              // per instance; back() = number of tasks
  struct Template {
    const taskgraph::Task* task;
    const std::uint32_t* preds;  // local ids in its block
    const std::uint32_t* succs;
    std::int64_t duration_ns;    // zero for communication
    std::uint32_t local;         // its id in its block: global id − local = the instance's first
    std::uint32_t num_preds, num_succs;
    std::uint8_t stream;         // task->stream, one load nearer
    taskgraph::TaskKind kind;    // task->kind, likewise
  };
  std::vector<Template> templates;  // every block's tasks, block after block
  // Per global task: its template, and kLinked when links to other instances
  // start or end at it (a few per instance; they are found by binary search).
  static constexpr std::uint32_t kLinked = 1u << 31;
  FixedArray<std::uint32_t> entries;
  // Links as (task, other end), sorted by task and then in program order:
  // link_preds by the task that waits, link_succs by the task waited for.
  std::vector<std::pair<TaskId, TaskId>> link_preds, link_succs;
  // Per stream: the instances with tasks on it, in issue order. A stream's
  // issue order is theirs, each giving its block's list for the stream; no
  // per-task copy (4 bytes a task, a page fault per 4 KiB written).
  std::vector<std::vector<std::uint32_t>> stream_instances;
  std::vector<bool> uses_slot;  // communicator slots some task of the program uses

  std::size_t num_tasks() const { return offset.back(); }
  /// The instance a global task belongs to (a binary search: only error
  /// messages ask).
  std::uint32_t instance_of(TaskId global) const;
  /// The template of a global task: the hot path reads it once per task and
  /// takes the task, duration, stream and dependencies from it.
  const Template& tmpl(TaskId global) const { return templates[entries[global] & ~kLinked]; }
  const taskgraph::Task& task(TaskId global) const { return *tmpl(global).task; }
  std::int64_t duration_ns(TaskId global) const { return templates[entries[global] & ~kLinked].duration_ns; }
  std::uint8_t stream_of(TaskId global) const { return templates[entries[global] & ~kLinked].stream; }

  /// Calls f(global id) for every task `global` waits for: its block's
  /// dependencies first, then its links.
  template <typename F>
  void for_each_pred(TaskId global, F&& f) const {
    for_each_pred(global, tmpl(global), f);
  }
  /// The same, with `global`'s template already at hand.
  template <typename F>
  void for_each_pred(TaskId global, const Template& t, F&& f) const {
    const TaskId first = global - t.local;
    for (std::uint32_t k = 0; k < t.num_preds; ++k) f(first + t.preds[k]);
    if (entries[global] & kLinked) for_each_link(link_preds, global, f);
  }
  /// Calls f(global id) for every task that waits for `global`.
  template <typename F>
  void for_each_succ(TaskId global, F&& f) const {
    for_each_succ(global, tmpl(global), f);
  }
  template <typename F>
  void for_each_succ(TaskId global, const Template& t, F&& f) const {
    const TaskId first = global - t.local;
    for (std::uint32_t k = 0; k < t.num_succs; ++k) f(first + t.succs[k]);
    if (entries[global] & kLinked) for_each_link(link_succs, global, f);
  }

 private:
  template <typename F>
  static void for_each_link(const std::vector<std::pair<TaskId, TaskId>>& links, TaskId global, F&& f) {
    auto it = std::lower_bound(links.begin(), links.end(), global,
                               [](const std::pair<TaskId, TaskId>& l, TaskId g) { return l.first < g; });
    for (; it != links.end() && it->first == global; ++it) f(it->second);
  }
};

/// Flattens `program`; streams are numbered below num_streams. Throws
/// SimulationError when a block has a cycle or a stream or slot index is out of range.
CompiledProgram compile_program(const taskgraph::Program& program, std::size_t num_streams,
                                std::size_t num_slots, const cost::CostModel& cost);

}  // namespace ptsim::engine::internal

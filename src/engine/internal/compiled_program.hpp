// CompiledProgram: a Program flattened for the simulation loop — every
// compute task's duration asked of the cost model once per block (not per
// instance), per block task a template (task, duration, dependencies), per
// stream the instances that issue tasks on it, and the links between
// instances. Private to engine/.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ptsim/common/time.hpp"
#include "ptsim/cost/cost_model.hpp"
#include "ptsim/taskgraph/program.hpp"

namespace ptsim::engine::internal {

using taskgraph::TaskId;

struct CompiledBlock {
  std::vector<taskgraph::Task> tasks;
  std::vector<Time> compute_duration;  // per task; zero for communication tasks
  // Per task the host time to issue it and every task before it in the
  // block (inclusive prefix, ns); host_total_ns: the whole block's.
  std::vector<std::int64_t> host_prefix_ns;
  std::int64_t host_total_ns = 0;
  std::vector<std::uint32_t> host_sync_tasks;    // local ids of its tasks flagged kHostSync or kHostWaitsForTask
  std::vector<std::uint32_t> pred_begin, preds;  // local ids
  std::vector<std::uint32_t> succ_begin, succs;
  std::vector<std::vector<TaskId>> stream_tasks;  // issue order per stream, local ids
  std::vector<std::uint8_t> used_streams;  // the streams with tasks, ascending (a block uses one or two of 18)
};

/// What the simulation loop reads on every event, one or two indexes away:
/// per block task a template (the task, its duration, its dependencies inside
/// its block), per stream the instances that issue tasks on it, and per task
/// one bit: whether links to other instances start or end at it. Nothing else
/// per task: the memory a run touches first costs a page fault per 4 KiB
/// (about 1.3 µs on the 2-core machine), so per-task copies of block data
/// cost more to create than they save. The loop finds a task's template from
/// where it stands — a stream's head, or a dependency inside the same
/// instance — as its block's first template plus the task's local id.
struct CompiledProgram {
  std::vector<CompiledBlock> blocks;
  std::vector<std::uint32_t> instance_block;
  std::vector<TaskId> offset;              // per instance; back() = number of tasks
  struct Template {
    const taskgraph::Task* task;
    const std::uint32_t* preds;  // local ids in its block
    const std::uint32_t* succs;
    std::int64_t duration_ns;    // zero for communication
    std::int64_t host_ns;        // host time to issue its block up to and including it
    std::uint32_t local;         // its id in its block: global id − local = the instance's first
    std::uint32_t num_preds, num_succs;
    std::uint8_t stream;         // task->stream, one load nearer
    taskgraph::TaskKind kind;    // task->kind, likewise
  };
  std::vector<Template> templates;          // every block's tasks, block after block
  std::vector<std::uint32_t> first_template;  // per block: its first task's template
  // Bit per global task: links to other instances start or end at it (a few
  // per instance; they are found by binary search).
  std::vector<std::uint64_t> linked;
  // Links as (task, other end), sorted by task and then in program order:
  // link_preds by the task that waits, link_succs by the task waited for.
  struct Link {
    TaskId task;
    TaskId other;
    std::uint8_t other_stream;  // the stream of `other`
  };
  std::vector<Link> link_preds, link_succs;
  // Per stream: the instances with tasks on it, in issue order, each as its
  // first global id and its block. A stream's issue order is theirs, each
  // giving its block's list for the stream; no per-task copy (4 bytes a task,
  // a page fault per 4 KiB written).
  struct StreamInstance {
    TaskId base;
    std::uint32_t block;
  };
  std::vector<std::vector<StreamInstance>> stream_instances;
  // Per stream, beside stream_instances: the host time to issue every
  // instance before each one. Empty when no task costs the host anything,
  // so that programs without host time keep their 8-byte entries.
  std::vector<std::vector<std::int64_t>> stream_instance_host_ns;
  // [block · num_streams + s]: the block's tasks on stream s (local ids, issue
  // order), so that entering an instance reads two small arrays, not the
  // instance's offset, its block and the block's per-stream vectors.
  std::vector<std::pair<const TaskId*, const TaskId*>> block_stream_tasks;
  std::vector<bool> uses_slot;  // communicator slots some task of the program uses
  bool host_issue = false;      // some task costs the host time to issue, or the host synchronizes
  // The tasks after which the host synchronizes the device (kHostSync), in
  // program order, each with the host time to issue the program up to and
  // including it when the host never waits (the engine adds the waits).
  struct HostSync {
    TaskId task;
    std::int64_t host_ns;
    bool whole_device = true;  // kHostSync: every task up to it; else (kHostWaitsForTask) the task alone
  };
  std::vector<HostSync> host_syncs;

  std::size_t num_tasks() const { return offset.back(); }
  /// The instance a global task belongs to (a binary search: only error
  /// messages and set-up ask).
  std::uint32_t instance_of(TaskId global) const;
  /// The template of any global task, by that binary search (error messages
  /// and set-up; the loop finds templates from its streams).
  const Template& find_template(TaskId global) const {
    const std::uint32_t i = instance_of(global);
    return template_of(i, global - offset[i]);
  }
  /// The template of task `local` of instance `instance`.
  const Template& template_of(std::uint32_t instance, std::uint32_t local) const {
    return templates[first_template[instance_block[instance]] + local];
  }
  const taskgraph::Task& task(TaskId global) const { return *find_template(global).task; }
  bool is_linked(TaskId global) const { return (linked[global >> 6] >> (global & 63)) & 1u; }

  /// Calls f(global id) for every task `global` (template t) waits for: its
  /// block's dependencies first, then its links.
  template <typename F>
  void for_each_pred(TaskId global, const Template& t, F&& f) const {
    const TaskId first = global - t.local;
    for (std::uint32_t k = 0; k < t.num_preds; ++k) f(first + t.preds[k]);
    if (is_linked(global))
      for (const Link* l = first_link(link_preds, global); l != link_preds.data() + link_preds.size() && l->task == global; ++l)
        f(l->other);
  }
  /// Calls f(global id, stream) for every task that waits for `global`
  /// (template t, its block's templates from `first_tmpl` on).
  template <typename F>
  void for_each_succ(TaskId global, const Template& t, std::uint32_t first_tmpl, F&& f) const {
    const TaskId first = global - t.local;
    for (std::uint32_t k = 0; k < t.num_succs; ++k) f(first + t.succs[k], templates[first_tmpl + t.succs[k]].stream);
    if (is_linked(global))
      for (const Link* l = first_link(link_succs, global); l != link_succs.data() + link_succs.size() && l->task == global; ++l)
        f(l->other, l->other_stream);
  }

 private:
  static const Link* first_link(const std::vector<Link>& links, TaskId global) {
    const auto it = std::lower_bound(links.begin(), links.end(), global,
                                     [](const Link& l, TaskId g) { return l.task < g; });
    return links.data() + (it - links.begin());
  }
};

/// Flattens `program`; streams are numbered below num_streams. Throws
/// SimulationError when a block has a cycle or a stream or slot index is out of range.
CompiledProgram compile_program(const taskgraph::Program& program, std::size_t num_streams,
                                std::size_t num_slots, const cost::CostModel& cost);

}  // namespace ptsim::engine::internal

// Program: what one class of ranks runs in a training step, as a sequence of
// instances of small task graphs (blocks) — "layer 17's forward for
// micro-batch 3" is an instance of the block "layer forward" — chained by
// links from a task of one instance to a task of a later one. A step of
// 60,000 kernels is a few dozen blocks and a few thousand instances: cheap
// to build, and the engine prices each block's tasks once.
//
// Tasks are numbered globally in instance order: instance i's task t is
// offset(i) + t. A stream's issue order is instance order, then each block's
// own order. A DAG of any shape is a Program of one block run once.
#pragma once

#include <cstdint>
#include <vector>

#include "ptsim/taskgraph/task_graph.hpp"

namespace ptsim::taskgraph {

struct BlockInstance {
  std::uint32_t block = 0;
  std::int32_t microbatch = -1;  // −1 when not per micro-batch
  std::int32_t layer = -1;       // −1 when not per layer
};

/// A task of one instance.
struct TaskRef {
  std::uint32_t instance = 0;
  TaskId task = 0;
};

/// `after` may start only once `before` has finished; before.instance < after.instance.
struct Link {
  TaskRef before;
  TaskRef after;
};

class Program {
 public:
  /// A program that runs `graph` once.
  static Program single(TaskGraph graph);

  /// Adds a block template; returns its id. Its tasks' micro-batch and layer
  /// are taken from each instance.
  std::uint32_t add_block(TaskGraph block);
  TaskGraph& block(std::uint32_t id) { return blocks_[id]; }
  const TaskGraph& block(std::uint32_t id) const { return blocks_[id]; }
  std::size_t num_blocks() const { return blocks_.size(); }

  std::uint32_t add_instance(std::uint32_t block, std::int32_t microbatch, std::int32_t layer);
  const std::vector<BlockInstance>& instances() const { return instances_; }

  void add_link(TaskRef before, TaskRef after);
  const std::vector<Link>& links() const { return links_; }

  /// Tasks over all instances.
  std::size_t num_tasks() const { return offsets_.back(); }
  /// Global id of the first task of an instance.
  TaskId offset(std::uint32_t instance) const { return offsets_[instance]; }
  TaskId global(TaskRef ref) const { return offsets_[ref.instance] + ref.task; }
  /// Which instance a global task id belongs to (binary search).
  TaskRef locate(TaskId global) const;
  /// The task behind a global id, with its instance's micro-batch and layer.
  Task task(TaskId global) const;

 private:
  std::vector<TaskGraph> blocks_;
  std::vector<BlockInstance> instances_;
  std::vector<TaskId> offsets_{0};  // offsets_[i]: first global id of instance i; back() = total
  std::vector<Link> links_;
};

}  // namespace ptsim::taskgraph

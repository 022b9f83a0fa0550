// Programs of block instances (see program.hpp).
#include "ptsim/taskgraph/program.hpp"

#include <algorithm>

#include "ptsim/common/error.hpp"

namespace ptsim::taskgraph {

Program Program::single(TaskGraph graph) {
  Program p;
  p.add_instance(p.add_block(std::move(graph)), -1, -1);
  return p;
}

std::uint32_t Program::add_block(TaskGraph block) {
  blocks_.push_back(std::move(block));
  return static_cast<std::uint32_t>(blocks_.size() - 1);
}

std::uint32_t Program::add_instance(std::uint32_t block, std::int32_t microbatch, std::int32_t layer) {
  PTSIM_ASSERT(block < blocks_.size(), "an instance of an existing block");
  instances_.push_back({block, microbatch, layer});
  offsets_.push_back(offsets_.back() + static_cast<TaskId>(blocks_[block].size()));
  return static_cast<std::uint32_t>(instances_.size() - 1);
}

void Program::add_link(TaskRef before, TaskRef after) {
  PTSIM_ASSERT(before.instance < after.instance, "links run from an instance to a later one");
  PTSIM_ASSERT(after.instance < instances_.size(), "links join existing instances");
  PTSIM_ASSERT(before.task < blocks_[instances_[before.instance].block].size() &&
                   after.task < blocks_[instances_[after.instance].block].size(),
               "links join existing tasks");
  links_.push_back({before, after});
}

TaskRef Program::locate(TaskId global) const {
  PTSIM_ASSERT(global < num_tasks(), "a task of this program");
  const auto it = std::upper_bound(offsets_.begin(), offsets_.end(), global);
  const auto instance = static_cast<std::uint32_t>(it - offsets_.begin() - 1);
  return {instance, global - offsets_[instance]};
}

Task Program::task(TaskId global) const {
  const TaskRef ref = locate(global);
  const BlockInstance& inst = instances_[ref.instance];
  Task t = blocks_[inst.block].task(ref.task);
  t.microbatch = inst.microbatch;
  t.layer = inst.layer;
  return t;
}

}  // namespace ptsim::taskgraph

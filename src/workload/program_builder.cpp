// Block recording and instantiation (see internal/program_builder.hpp).
#include "internal/program_builder.hpp"

#include "ptsim/common/error.hpp"
#include "ptsim/workload/step_workload.hpp"

namespace ptsim::workload::internal {

using taskgraph::Task;
using taskgraph::TaskId;
using taskgraph::TaskKind;
using taskgraph::TaskRef;

// ---- BlockRecorder ---------------------------------------------------------

TaskId BlockRecorder::add(const Task& original) {
  Task task = original;
  if (in_graph_) {
    // Replayed with the iteration's graph: issued with it, never waited on.
    task.host_issue = taskgraph::HostIssue::InGraph;
    task.flags &= static_cast<std::uint8_t>(~(taskgraph::kHostSync | taskgraph::kHostWaitsForTask));
  }
  if (lane_ == 1) {
    if (task.stream == streams::kCompute && !shared_streams_) task.stream = streams::kCompute1;
    if (task.stream == streams::kTensorParallel) task.stream = streams::kTensorParallel1;
    if (task.stream == streams::kExpertParallel && !shared_streams_) task.stream = streams::kExpertParallel1;
    if (task.kind != TaskKind::Compute) {
      if (task.comm_slot == slots::kTensorParallel) task.comm_slot = slots::kTensorParallel1;
      if (task.comm_slot == slots::kExpertParallel) task.comm_slot = slots::kExpertParallel1;
      if (task.comm_slot == slots::kExpertTensorParallel) task.comm_slot = slots::kExpertTensorParallel1;
    }
  }
  const TaskId id = graph_.add_task(task);
  if (last_on_stream_.size() <= task.stream) last_on_stream_.resize(task.stream + 1u);
  last_on_stream_[task.stream] = id;
  return id;
}

void BlockRecorder::after_last_kernel(TaskId id) {
  if (last_kernel_) {
    graph_.add_dependency(*last_kernel_, id);
  } else {
    needs_last_kernel_.push_back(id);
  }
}

std::vector<std::uint32_t> BlockRecorder::names_of(const std::vector<OpSpec>& ops,
                                                   const std::string& prefix) {
  std::vector<std::uint32_t> ids;
  ids.reserve(ops.size());
  for (const OpSpec& op : ops) ids.push_back(names_->intern(prefix + op.name));
  return ids;
}

namespace {

struct Route {
  std::uint8_t stream, slot, category;
};

// Where a communication op of `group` runs (sends and receives of the CP ring
// on their own streams).
Route route_of(CommGroup group, OpKind kind) {
  switch (group) {
    case CommGroup::TensorParallel:
      return {streams::kTensorParallel, slots::kTensorParallel, categories::kTensorParallel};
    case CommGroup::ExpertTensorParallel:
      return {streams::kTensorParallel, slots::kExpertTensorParallel, categories::kTensorParallel};
    case CommGroup::ExpertParallel:
      return {streams::kExpertParallel, slots::kExpertParallel, categories::kExpertParallel};
    case CommGroup::ContextParallel:
      // A collective over the whole group (PyTorch's all-gather of keys and
      // values) runs in order with the sends, as on PyTorch's one CP stream.
      if (kind == OpKind::Collective)
        return {streams::kContextSend, slots::kContextParallel, categories::kContextParallel};
      return kind == OpKind::Recv ? Route{streams::kContextRecv, slots::kContextRecv, categories::kContextParallel}
                                  : Route{streams::kContextSend, slots::kContextSend, categories::kContextParallel};
  }
  return {};
}

}  // namespace

TaskId BlockRecorder::emit(const OpSpec& op, std::uint32_t name, std::uint8_t category,
                           std::uint64_t alloc_bytes, std::uint64_t free_bytes) {
  Task task;
  task.name = name;
  task.bytes = op.bytes;
  task.host_ops = op.host_ops;
  task.host_issue = op.host_issue;
  task.alloc_bytes = alloc_bytes;
  task.free_bytes = free_bytes;
  const auto explicit_dependency = [&](TaskId id) {
    if (op.after >= 0) graph_.add_dependency(list_.at(static_cast<std::size_t>(op.after)), id);
  };
  if (op.kind == OpKind::Collective || op.kind == OpKind::Send || op.kind == OpKind::Recv) {
    const Route r = route_of(op.group, op.kind);
    task.kind = op.kind == OpKind::Send   ? TaskKind::Send
                : op.kind == OpKind::Recv ? TaskKind::Recv
                                          : TaskKind::Collective;
    task.collective = op.collective;
    task.shape = op.shape;  // an expert dispatch's routing (taskgraph::ExpertDispatch)
    task.flags = op.flags;  // kHostSync where the host waits on it
    task.stream = r.stream;
    task.comm_slot = r.slot;
    task.category = r.category;
    const TaskId id = add(task);
    list_.push_back(id);
    // Collectives and sends carry what the last kernel produced, unless told
    // what they wait for; receives are posted as soon as their stream allows.
    if (op.after >= 0) {
      explicit_dependency(id);
    } else if (op.kind != OpKind::Recv) {
      after_last_kernel(id);
    }
    if (op.kind != OpKind::Send && !op.detached) (op.async ? before_after_next_ : before_next_).push_back(id);
    return id;
  }
  const Task kernel = kernel_task(op);
  task.kind = kernel.kind;
  task.compute = kernel.compute;
  task.kernel = kernel.kernel;
  task.dtype = kernel.dtype;
  task.shape = kernel.shape;
  task.flags = kernel.flags;
  task.flops = kernel.flops;
  task.stream = streams::kCompute;
  task.category = category;
  const TaskId id = add(task);
  list_.push_back(id);
  explicit_dependency(id);
  for (const TaskId dep : before_next_) graph_.add_dependency(dep, id);
  before_next_ = std::move(before_after_next_);
  before_after_next_.clear();
  if (!first_kernel_) {
    first_kernel_ = id;
  } else if (!second_kernel_) {
    second_kernel_ = id;
  }
  last_kernel_ = id;
  return id;
}

TaskId BlockRecorder::emit_host_copy(std::uint8_t stream, std::uint64_t bytes, const std::string& name,
                                     std::uint64_t alloc, std::uint64_t free) {
  Task task;
  task.kind = TaskKind::Compute;
  task.compute = taskgraph::ComputeKind::MemoryBound;
  task.kernel = taskgraph::KernelClass::HostCopy;
  task.name = names_->intern(name);
  task.bytes = bytes;
  task.alloc_bytes = alloc;
  task.free_bytes = free;
  task.stream = stream;
  task.category = categories::kOffload;
  const TaskId id = add(task);
  list_.push_back(id);
  after_last_kernel(id);
  return id;
}

TaskId BlockRecorder::add_point_to_point(TaskKind kind, std::uint8_t stream, std::uint8_t slot,
                                         std::uint64_t bytes, const std::string& name, std::uint8_t flags) {
  Task task;
  task.kind = kind;
  task.flags = flags;
  task.collective = taskgraph::CollectiveKind::PointToPoint;
  task.stream = stream;
  task.comm_slot = slot;
  task.category = categories::kPipelineParallel;
  task.bytes = bytes;
  task.name = names_->intern(name);
  const TaskId id = add(task);
  list_.push_back(id);
  return id;
}

TaskId BlockRecorder::emit_recv(std::uint8_t stream, std::uint8_t slot, std::uint64_t bytes,
                                const std::string& name, std::uint8_t flags) {
  const TaskId id = add_point_to_point(TaskKind::Recv, stream, slot, bytes, name, flags);
  before_next_.push_back(id);
  return id;
}

TaskId BlockRecorder::emit_send(std::uint8_t stream, std::uint8_t slot, std::uint64_t bytes,
                                const std::string& name, std::uint8_t flags) {
  const TaskId id = add_point_to_point(TaskKind::Send, stream, slot, bytes, name, flags);
  after_last_kernel(id);
  return id;
}

TaskId BlockRecorder::emit_collective(std::uint8_t stream, std::uint8_t slot, std::uint8_t category,
                                      std::uint64_t bytes, const std::string& name, bool blocks_next,
                                      taskgraph::CollectiveKind kind, std::uint64_t alloc_bytes, std::uint8_t flags,
                                      std::uint32_t host_ops) {
  Task task;
  task.kind = TaskKind::Collective;
  task.collective = kind;
  task.flags = flags;
  task.host_ops = host_ops;
  task.alloc_bytes = alloc_bytes;
  task.stream = stream;
  task.comm_slot = slot;
  task.category = category;
  task.bytes = bytes;
  task.name = names_->intern(name);
  const TaskId id = add(task);
  after_last_kernel(id);
  if (blocks_next) before_next_.push_back(id);
  return id;
}

void BlockRecorder::follow_stream(TaskId id, std::uint8_t stream) {
  needs_stream_.emplace_back(id, stream);
}

BlockSummary BlockRecorder::summary() const {
  return {first_kernel_,       second_kernel_,     last_kernel_,      needs_last_kernel_,
          needs_stream_,       before_next_,       before_after_next_, last_on_stream_};
}

// ---- ProgramBuilder ----------------------------------------------------------

std::uint32_t ProgramBuilder::instantiate(std::uint32_t block, std::int32_t microbatch, std::int32_t layer) {
  const std::uint32_t i = program_->add_instance(block, microbatch, layer);
  const BlockSummary& s = summaries_[block];
  for (const TaskId t : s.needs_last_kernel)
    if (last_kernel_) program_->add_link(*last_kernel_, {i, t});
  for (const auto& [t, stream] : s.needs_stream)
    if (stream < last_on_stream_.size() && last_on_stream_[stream])
      program_->add_link(*last_on_stream_[stream], {i, t});
  if (s.first_kernel) {
    // The pending dependencies land on this block's first and second kernels.
    for (const TaskRef& r : before_next_) program_->add_link(r, {i, *s.first_kernel});
    before_next_.clear();
    if (s.second_kernel) {
      for (const TaskRef& r : before_after_next_) program_->add_link(r, {i, *s.second_kernel});
    } else {
      before_next_ = before_after_next_;
    }
    before_after_next_.clear();
  }
  for (const TaskId t : s.pending_next) before_next_.push_back({i, t});
  for (const TaskId t : s.pending_after_next) before_after_next_.push_back({i, t});
  if (s.last_kernel) last_kernel_ = TaskRef{i, *s.last_kernel};
  if (last_on_stream_.size() < s.last_on_stream.size()) last_on_stream_.resize(s.last_on_stream.size());
  for (std::size_t st = 0; st < s.last_on_stream.size(); ++st)
    if (s.last_on_stream[st]) last_on_stream_[st] = TaskRef{i, *s.last_on_stream[st]};
  return i;
}

void ProgramBuilder::wait_for_stream(std::uint8_t stream) {
  if (stream < last_on_stream_.size() && last_on_stream_[stream]) before_next_.push_back(*last_on_stream_[stream]);
}

}  // namespace ptsim::workload::internal

namespace ptsim::workload::internal {

void ProgramBuilder::fork_lane() {
  PTSIM_ASSERT(lane_ == 0, "lanes fork from lane 0");
  other_ = Chain{};
  other_.last_kernel = last_kernel_;
  if (last_kernel_) other_.before_next.push_back(*last_kernel_);
}

void ProgramBuilder::set_lane(int lane) {
  if (lane == lane_) return;
  std::swap(last_kernel_, other_.last_kernel);
  std::swap(before_next_, other_.before_next);
  std::swap(before_after_next_, other_.before_after_next);
  lane_ = lane;
}

void ProgramBuilder::sync_lanes() {
  if (other_.last_kernel) before_next_.push_back(*other_.last_kernel);
  if (last_kernel_) other_.before_next.push_back(*last_kernel_);
}

void ProgramBuilder::join_lanes() {
  set_lane(0);
  if (other_.last_kernel) before_next_.push_back(*other_.last_kernel);
  before_next_.insert(before_next_.end(), other_.before_next.begin(), other_.before_next.end());
  before_after_next_.insert(before_after_next_.end(), other_.before_after_next.begin(),
                            other_.before_after_next.end());
  other_ = Chain{};
}

}  // namespace ptsim::workload::internal

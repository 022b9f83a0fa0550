// Task emission and cross-stream dependencies (see internal/program_emitter.hpp).
#include "internal/program_emitter.hpp"

#include "ptsim/workload/step_workload.hpp"

namespace ptsim::workload::internal {

using taskgraph::Task;
using taskgraph::TaskId;
using taskgraph::TaskKind;

TaskId ProgramEmitter::add(Task task) {
  const TaskId id = graph_.add_task(task);
  if (last_on_stream_.size() <= task.stream) last_on_stream_.resize(task.stream + 1u);
  last_on_stream_[task.stream] = id;
  return id;
}

void ProgramEmitter::follow_stream(TaskId id, std::uint8_t stream) {
  if (stream < last_on_stream_.size() && last_on_stream_[stream] && *last_on_stream_[stream] != id)
    graph_.add_dependency(*last_on_stream_[stream], id);
}

void ProgramEmitter::wait_for_stream(std::uint8_t stream) {
  if (stream < last_on_stream_.size() && last_on_stream_[stream])
    before_next_.push_back(*last_on_stream_[stream]);
}

void ProgramEmitter::after_last_kernel(TaskId id) {
  if (last_kernel_) graph_.add_dependency(*last_kernel_, id);
}

std::vector<std::uint32_t> ProgramEmitter::names_of(const std::vector<OpSpec>& ops,
                                                    const std::string& prefix) {
  std::vector<std::uint32_t> ids;
  ids.reserve(ops.size());
  for (const OpSpec& op : ops) ids.push_back(names_->intern(prefix + op.name));
  return ids;
}

TaskId ProgramEmitter::emit(const OpSpec& op, std::uint32_t name, std::uint8_t category,
                            Where where, std::uint64_t alloc_bytes, std::uint64_t free_bytes) {
  Task task;
  task.name = name;
  task.microbatch = where.microbatch;
  task.layer = where.layer;
  task.bytes = op.bytes;
  task.alloc_bytes = alloc_bytes;
  task.free_bytes = free_bytes;
  if (op.kind == OpKind::TpAllReduce) {
    task.kind = TaskKind::Collective;
    task.collective = taskgraph::CollectiveKind::AllReduce;
    task.stream = streams::kTensorParallel;
    task.comm_slot = slots::kTensorParallel;
    task.category = categories::kTensorParallel;
    const TaskId id = add(task);
    after_last_kernel(id);
    (op.async ? before_after_next_ : before_next_).push_back(id);
    return id;
  }
  task.kind = TaskKind::Compute;
  task.compute = op.kind == OpKind::Matmul ? taskgraph::ComputeKind::Matmul
                                           : taskgraph::ComputeKind::MemoryBound;
  task.flops = op.flops;
  task.stream = streams::kCompute;
  task.category = category;
  const TaskId id = add(task);
  for (const TaskId dep : before_next_) graph_.add_dependency(dep, id);
  before_next_ = std::move(before_after_next_);
  before_after_next_.clear();
  last_kernel_ = id;
  return id;
}

TaskId ProgramEmitter::emit_recv(std::uint8_t stream, std::uint8_t slot, std::uint64_t bytes,
                                 const std::string& name, Where where) {
  Task task;
  task.kind = TaskKind::Recv;
  task.collective = taskgraph::CollectiveKind::PointToPoint;
  task.stream = stream;
  task.comm_slot = slot;
  task.category = categories::kPipelineParallel;
  task.bytes = bytes;
  task.name = names_->intern(name);
  task.microbatch = where.microbatch;
  const TaskId id = add(task);
  before_next_.push_back(id);
  return id;
}

TaskId ProgramEmitter::emit_send(std::uint8_t stream, std::uint8_t slot, std::uint64_t bytes,
                                 const std::string& name, Where where) {
  Task task;
  task.kind = TaskKind::Send;
  task.collective = taskgraph::CollectiveKind::PointToPoint;
  task.stream = stream;
  task.comm_slot = slot;
  task.category = categories::kPipelineParallel;
  task.bytes = bytes;
  task.name = names_->intern(name);
  task.microbatch = where.microbatch;
  const TaskId id = add(task);
  after_last_kernel(id);
  return id;
}

TaskId ProgramEmitter::emit_collective(std::uint8_t stream, std::uint8_t slot,
                                       std::uint8_t category, std::uint64_t bytes,
                                       const std::string& name, bool blocks_next) {
  Task task;
  task.kind = TaskKind::Collective;
  task.collective = taskgraph::CollectiveKind::AllReduce;
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

}  // namespace ptsim::workload::internal

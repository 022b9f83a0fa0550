// Building a stage's Program from blocks. A BlockRecorder records one block's
// tasks once, with the dependencies between its streams the way the
// framework synchronises them — a kernel waits for the communication whose
// result it consumes, communication waits for the kernel that produced its
// input — and notes what crosses the block's edges. The ProgramBuilder then
// instantiates blocks in issue order and links each instance to the ones
// before it by the same rules. Private to workload/.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "internal/name_table.hpp"
#include "ptsim/taskgraph/program.hpp"
#include "ptsim/workload/op_spec.hpp"

namespace ptsim::workload::internal {

/// What crosses a block's edges, found while recording it.
struct BlockSummary {
  std::optional<taskgraph::TaskId> first_kernel, second_kernel, last_kernel;
  std::vector<taskgraph::TaskId> needs_last_kernel;  // communication before any kernel of the block
  std::vector<std::pair<taskgraph::TaskId, std::uint8_t>> needs_stream;  // (task, stream) it follows
  std::vector<taskgraph::TaskId> pending_next;        // the next kernel after the block waits for these
  std::vector<taskgraph::TaskId> pending_after_next;  // the kernel after that one waits for these
  std::vector<std::optional<taskgraph::TaskId>> last_on_stream;
};

class BlockRecorder {
 public:
  /// `shared_streams`: lane 1 issues its kernels and expert-parallel
  /// exchanges on lane 0's streams (ProgramBuilder::share_lane_streams).
  /// `in_graph`: every task is part of one CUDA graph of the whole
  /// iteration (ProgramBuilder::set_full_graph).
  explicit BlockRecorder(NameTable& names, int lane = 0, bool shared_streams = false, bool in_graph = false)
      : names_(&names), lane_(lane), shared_streams_(shared_streams), in_graph_(in_graph) {}

  /// Starts a list of ops: OpSpec::after indexes ops emitted since.
  void begin_list() { list_.clear(); }
  /// An op of the current list: a kernel (compute stream) or a communication
  /// op on its group's stream (see OpSpec for who waits for what), named
  /// `name` (interned), taking alloc bytes at its start and giving free back
  /// at its end.
  taskgraph::TaskId emit(const OpSpec& op, std::uint32_t name, std::uint8_t category,
                         std::uint64_t alloc_bytes, std::uint64_t free_bytes);
  /// A receive the next kernel consumes. `flags`: Task::flags (kHostSync).
  taskgraph::TaskId emit_recv(std::uint8_t stream, std::uint8_t slot, std::uint64_t bytes,
                              const std::string& name, std::uint8_t flags = 0);
  /// A send of what the last kernel produced.
  taskgraph::TaskId emit_send(std::uint8_t stream, std::uint8_t slot, std::uint64_t bytes,
                              const std::string& name, std::uint8_t flags = 0);
  /// A collective on `stream` of what the last kernel produced; `blocks_next`
  /// makes the next kernel wait for it. `flags`: Task::flags (kTensorList);
  /// `host_ops`: Task::host_ops.
  taskgraph::TaskId emit_collective(std::uint8_t stream, std::uint8_t slot, std::uint8_t category, std::uint64_t bytes,
                                    const std::string& name, bool blocks_next,
                                    taskgraph::CollectiveKind kind = taskgraph::CollectiveKind::AllReduce,
                                    std::uint64_t alloc_bytes = 0, std::uint8_t flags = 0, std::uint32_t host_ops = 0);
  /// A copy engine's transfer of `bytes` between HBM and host memory on
  /// `stream` (activation offload), after the last kernel: taking `alloc`
  /// at its start, giving `free` back at its end; no kernel waits for it.
  taskgraph::TaskId emit_host_copy(std::uint8_t stream, std::uint64_t bytes, const std::string& name,
                                   std::uint64_t alloc, std::uint64_t free);
  /// Task `id` also waits for the last task issued on `stream` before this block.
  void follow_stream(taskgraph::TaskId id, std::uint8_t stream);
  /// Interned ids of `prefix` + each op's name, in order.
  std::vector<std::uint32_t> names_of(const std::vector<OpSpec>& ops, const std::string& prefix);

  taskgraph::TaskGraph& graph() { return graph_; }
  BlockSummary summary() const;

 private:
  taskgraph::TaskId add(const taskgraph::Task& task);
  /// A pipeline send or receive (`kind`), added and listed.
  taskgraph::TaskId add_point_to_point(taskgraph::TaskKind kind, std::uint8_t stream, std::uint8_t slot,
                                       std::uint64_t bytes, const std::string& name, std::uint8_t flags);
  void after_last_kernel(taskgraph::TaskId id);

  NameTable* names_;
  int lane_;  // 1: the second compute lane's streams
  bool shared_streams_;
  bool in_graph_;
  taskgraph::TaskGraph graph_;
  std::vector<taskgraph::TaskId> list_;
  std::optional<taskgraph::TaskId> first_kernel_, second_kernel_, last_kernel_;
  std::vector<taskgraph::TaskId> needs_last_kernel_;
  std::vector<std::pair<taskgraph::TaskId, std::uint8_t>> needs_stream_;
  std::vector<taskgraph::TaskId> before_next_, before_after_next_;
  std::vector<std::optional<taskgraph::TaskId>> last_on_stream_;
};

class ProgramBuilder {
 public:
  ProgramBuilder(NameTable& names, taskgraph::Program& program) : names_(&names), program_(&program) {}

  /// The block recorded under `key`, recording it with `record(BlockRecorder&)`
  /// the first time.
  template <typename Record>
  std::uint32_t block(const std::string& key, Record&& record) {
    const std::string lane_key = (lane_ == 0 ? key : key + "@lane1") + (full_graph_ ? "@graph" : "");
    if (const auto it = keys_.find(lane_key); it != keys_.end()) return it->second;
    BlockRecorder recorder(*names_, lane_, shared_streams_, full_graph_);
    record(recorder);
    summaries_.push_back(recorder.summary());
    const std::uint32_t id = program_->add_block(std::move(recorder.graph()));
    keys_.emplace(lane_key, id);
    return id;
  }

  // Two lanes of work that may run at once (DualPipe's overlapped forward
  // and backward): blocks instantiated on lane 1 use the second compute lane's
  // streams and their own chain of dependencies.
  /// Starts lane 1 from here: its first kernel waits for lane 0's last one.
  void fork_lane();
  /// Instantiates on lane `lane` from now on.
  void set_lane(int lane);
  /// The lane instances go to (blocks are recorded per lane).
  int lane() const { return lane_; }
  /// Back to lane 0 alone: its next kernel waits for lane 1's work too.
  void join_lanes();
  /// Each lane's next kernel waits for the other lane's last one: the two
  /// lanes advance in step, neither starting its next piece of work before
  /// the other has finished its current one (combined 1F1B's layer pairs,
  /// issued in order on one compute stream).
  void sync_lanes();

  /// From now on lane 1's blocks issue their kernels and expert-parallel
  /// exchanges on lane 0's streams, each stream running the two lanes' work
  /// in the order it is instantiated (Megatron-Core's combined 1F1B: one
  /// compute and one communication stream for both micro-batches; the lanes
  /// keep their chains of dependencies and their communicators). Blocks
  /// recorded before are not changed.
  void share_lane_streams() { shared_streams_ = true; }
  /// While on, the blocks recorded are part of one CUDA graph of the whole
  /// iteration (Megatron-Core's full_iteration): the host spends nothing on
  /// their tasks and never waits on the GPU inside them.
  void set_full_graph(bool on) { full_graph_ = on; }
  /// The current lane's last kernel, which the next block's first kernel
  /// waits for; setting it back lets a block run beside the lane's chain
  /// (its stream still orders it).
  std::optional<taskgraph::TaskRef> last_kernel() const { return last_kernel_; }
  void set_last_kernel(std::optional<taskgraph::TaskRef> kernel) { last_kernel_ = kernel; }

  /// Appends an instance of `block` and links it to the instances before it;
  /// returns the instance.
  std::uint32_t instantiate(std::uint32_t block, std::int32_t microbatch, std::int32_t layer);
  /// The next kernel waits for the last task issued on `stream`, if any.
  void wait_for_stream(std::uint8_t stream);
  /// The next kernel waits for `task`.
  void wait_for(taskgraph::TaskRef task) { before_next_.push_back(task); }

 private:
  NameTable* names_;
  taskgraph::Program* program_;
  std::map<std::string, std::uint32_t> keys_;
  std::vector<BlockSummary> summaries_;
  std::optional<taskgraph::TaskRef> last_kernel_;
  std::vector<taskgraph::TaskRef> before_next_, before_after_next_;
  std::vector<std::optional<taskgraph::TaskRef>> last_on_stream_;
  // The inactive lane's chain (last kernel, pending dependencies).
  struct Chain {
    std::optional<taskgraph::TaskRef> last_kernel;
    std::vector<taskgraph::TaskRef> before_next, before_after_next;
  };
  Chain other_;
  int lane_ = 0;
  bool shared_streams_ = false;
  bool full_graph_ = false;
};

}  // namespace ptsim::workload::internal

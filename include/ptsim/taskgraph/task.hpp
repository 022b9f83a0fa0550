// Task: one unit of work on one rank — a kernel on a stream, or a rank's part
// in a collective or point-to-point transfer. Work only (FLOP, bytes), never
// durations: the cost model turns work into seconds. Knows nothing of
// transformers; names and categories are labels given by the builder.
#pragma once

#include <cstdint>
#include <string_view>

#include "ptsim/common/dtype.hpp"

namespace ptsim::taskgraph {

using TaskId = std::uint32_t;

enum class TaskKind : std::uint8_t {
  Compute,     // a kernel on a compute stream
  Collective,  // this rank's part of a collective over a communicator
  Send,        // point-to-point: this rank sends to the other member
  Recv,        // point-to-point: this rank receives from the other member
};

enum class CollectiveKind : std::uint8_t {
  None,
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  AllToAll,
  PointToPoint,
};

std::string_view to_string(CollectiveKind k);

/// How a compute task's time is bounded (cost/compute_cost picks the formula).
enum class ComputeKind : std::uint8_t {
  Matmul,       // tensor-core GEMM: FLOP and bytes both matter
  MemoryBound,  // elementwise, norms, softmax, copies: bytes over bandwidth
};

struct Task {
  TaskKind kind = TaskKind::Compute;
  ComputeKind compute = ComputeKind::MemoryBound;
  CollectiveKind collective = CollectiveKind::None;
  Dtype dtype = Dtype::Bf16;
  std::uint8_t stream = 0;     // index into Workload::stream_names
  std::uint8_t category = 0;   // index into Workload::category_names (for reports)
  std::uint8_t comm_slot = 0;  // communication tasks: index into Workload::comm_slot_names
  double flops = 0;            // matrix-multiply FLOP (compute tasks)
  std::uint64_t bytes = 0;     // compute: HBM traffic; communication: payload per rank
  std::uint64_t alloc_bytes = 0;  // memory allocated when the task starts
  std::uint64_t free_bytes = 0;   // memory released when the task ends
  std::uint32_t name = 0;      // index into Workload::op_names
  std::int32_t microbatch = -1;  // −1 when the task is not per micro-batch
  std::int32_t layer = -1;       // −1 when the task is not per layer
};

}  // namespace ptsim::taskgraph

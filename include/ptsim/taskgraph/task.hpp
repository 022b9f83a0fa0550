// Task: one unit of work on one rank — a kernel on a stream, or a rank's part
// in a collective or point-to-point transfer. Work only (FLOP, bytes), never
// durations: the cost model turns work into seconds. Knows nothing of
// transformers; names and categories are labels given by the builder.
#pragma once

#include <array>
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
  /// An MoE token exchange that sends each token once to every NVLink domain
  /// holding one of its experts and forwards it there over NVLink (DeepEP's
  /// and HybridEP's dispatch and combine). Task::bytes: the rank's tokens,
  /// one copy each; Task::shape: an ExpertExchange (expert_exchange_shape).
  ExpertDispatch,
};

/// The library an ExpertDispatch runs in: the cost model prices each at the
/// profile's measured rates where it holds them.
enum class ExchangeLibrary : std::uint32_t { DeepEP = 0, HybridEP = 1 };

/// What an ExpertDispatch task's shape holds: routed experts per token,
/// experts in all, its library, whether it is a combine (else a dispatch),
/// and the SMs its kernels hold while they run (0: the library's default,
/// which may depend on where the ranks are, so the cost model resolves it).
struct ExpertExchange {
  std::uint32_t topk = 0;
  std::uint32_t experts = 0;
  ExchangeLibrary library = ExchangeLibrary::DeepEP;
  bool combine = false;
  std::uint32_t sms = 0;
};

/// The Task::shape of an ExpertDispatch (the direction and the SMs share
/// shape[3]: bit 0 and the bits above).
constexpr std::array<std::uint32_t, 4> expert_exchange_shape(const ExpertExchange& x) {
  return {x.topk, x.experts, static_cast<std::uint32_t>(x.library), (x.sms << 1) | (x.combine ? 1u : 0u)};
}

std::string_view to_string(CollectiveKind k);

/// How a compute task's time is bounded (cost/compute_cost picks the formula).
enum class ComputeKind : std::uint8_t {
  Matmul,       // tensor-core GEMM: FLOP and bytes both matter
  MemoryBound,  // elementwise, norms, softmax, copies: bytes over bandwidth
  Attention,    // fused attention (FlashAttention-style): FLOP at the attention rate
};

/// What a kernel does, for the efficiency the cost model gives it and for
/// matching kernels against micro-benchmark measurements.
enum class KernelClass : std::uint8_t {
  Gemm,         // shape: m, n, k, batch
  Attention,    // shape: batch·heads, query length, key length, head dim; flags
  Norm,         // layer/RMS norm and their backward
  Softmax,      // (scaled, masked) softmax and its backward
  Elementwise,  // activations, dropout, residual adds, rotary embedding, casts
  Embedding,    // gathers and scatter-adds of embedding rows
  Optimizer,    // fused optimizer step
  Copy,         // plain memory copies
  HostCopy,     // a copy engine's transfer between HBM and host memory (activation offload): bytes over the host link
  /// Token-level sparse attention over keys gathered per query (DeepSeek's
  /// sparse MLA kernels); shape: batch·heads, query length, keys each query
  /// attends to, head dim; priced at the profile's sparse_mla efficiencies.
  SparseAttention,
  /// A kernel of the chunked state-space-duality scan of a Mamba-2 layer
  /// (mamba_ssm's Triton SSD kernels); shape unused, its bytes and FLOPs
  /// count its work. Priced by the SMs' issue rate where that is slower
  /// than its bytes (cost/compute_cost.hpp).
  StateSpaceScan,
};
inline constexpr int kNumKernelClasses = 11;
/// Whether a kernel's shape is attention's (batch·heads, queries, keys, head dim).
constexpr bool attention_shaped(KernelClass k) {
  return k == KernelClass::Attention || k == KernelClass::SparseAttention;
}

/// Attention kernel flags (Task::flags).
inline constexpr std::uint8_t kCausal = 1;
inline constexpr std::uint8_t kBackwardPass = 2;
inline constexpr std::uint8_t kCudnn = 8;  // cuDNN's fused kernel (the profile's cuDNN efficiencies)
inline constexpr std::uint8_t kFlash2 = 64;  // FlashAttention-2 (the profile's flash2 efficiencies)
inline constexpr std::uint8_t kTriton = 128;  // FlashAttention's Triton kernel (the profile's triton efficiencies)
/// A causal sliding window (Task::shape[2] the window's keys, Task::flops
/// the unmasked band's); its bit is kTensorList's, which only collectives carry.
inline constexpr std::uint8_t kSlidingWindow = 4;
/// Collective flag (Task::flags): an all-gather into, or a reduce-scatter
/// from, a list of one tensor per member. PyTorch's ProcessGroupNCCL runs
/// NCCL on a flat buffer and copies every member's piece between it and the
/// list, one copy kernel each: after an all-gather, before a reduce-scatter.
inline constexpr std::uint8_t kTensorList = 4;
/// Any task (Task::flags): once the host has issued it, the host waits until
/// the GPU has finished every task issued up to it before it issues the next
/// one — torch.cuda.synchronize(), as Megatron-LM runs after each batched
/// pipeline send/receive (ParallelConfig::batch_p2p_sync).
inline constexpr std::uint8_t kHostSync = 16;
/// Any task: once the host has issued it, the host waits until this task
/// alone is done (a CUDA event's synchronize, as Megatron-Core's all-to-all
/// token dispatcher waits for its split sizes), and then goes on.
inline constexpr std::uint8_t kHostWaitsForTask = 32;

std::string_view to_string(KernelClass k);

/// How the host issues a task (cost::CostModel::host_issue): eagerly, the
/// framework's time a task; inside a replayed CUDA graph, no time of its
/// own; or as the first task of a graph's replay, which costs what one
/// eager task does.
enum class HostIssue : std::uint8_t { Eager, InGraph, GraphLaunch };

struct Task;
/// An attention task's value head dim, which its shape does not hold: its
/// FLOPs are 2·batch·heads·(scores)·(head dim + value head dim) forward and
/// twice that backward, the scores query × key length, or under a sliding
/// window of w keys (shape[2]) the band's w(w + 1)/2 + (s − w)·w. Zero for a
/// task with no scores.
double attention_value_head_dim(const Task& task);

/// The exchange an ExpertDispatch task's shape describes.
ExpertExchange expert_exchange_of(const Task& task);

struct Task {
  TaskKind kind = TaskKind::Compute;
  ComputeKind compute = ComputeKind::MemoryBound;
  CollectiveKind collective = CollectiveKind::None;
  Dtype dtype = Dtype::Bf16;
  KernelClass kernel = KernelClass::Elementwise;
  std::uint8_t flags = 0;      // kCausal … kSlidingWindow (attention); kTensorList; kHostSync, kHostWaitsForTask
  std::uint8_t stream = 0;     // index into Workload::stream_names
  std::uint8_t category = 0;   // index into Workload::category_names (for reports)
  std::uint8_t comm_slot = 0;  // communication tasks: index into Workload::comm_slot_names
  HostIssue host_issue = HostIssue::Eager;  // in the padding before host_ops
  /// Tensor operations the framework runs from Python on the host to issue
  /// this task, each costing the host its own time (cost::HostIssue):
  /// DeepSpeed 0.3's per-rank views of a ZeRO-3 list collective. In the
  /// padding before `flops`, so a task is no larger.
  std::uint32_t host_ops = 0;
  double flops = 0;            // matrix-multiply FLOP (compute tasks)
  /// GEMM: m, n, k, batch; attention: batch·heads, query length, key length, head dim.
  std::array<std::uint32_t, 4> shape{};
  std::uint64_t bytes = 0;     // compute: HBM traffic; communication: payload per rank
  std::uint64_t alloc_bytes = 0;  // memory allocated when the task starts
  std::uint64_t free_bytes = 0;   // memory released when the task ends
  std::uint32_t name = 0;      // index into Workload::op_names
  std::int32_t microbatch = -1;  // −1 when the task is not per micro-batch
  std::int32_t layer = -1;       // −1 when the task is not per layer
};
static_assert(sizeof(Task) <= 80, "a task is held millions of times: keep it within 80 bytes");

}  // namespace ptsim::taskgraph

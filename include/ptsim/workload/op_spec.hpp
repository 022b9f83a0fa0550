// OpSpec: one operation of a training step as the framework issues it — a
// kernel (matmul or memory-bound) or a tensor-parallel all-reduce — with its
// work and the memory it holds for the backward pass. The workload builder
// turns OpSpecs into Tasks; nothing here knows about time.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ptsim/common/dtype.hpp"
#include "ptsim/strategy/recompute_modules.hpp"
#include "ptsim/taskgraph/task.hpp"

namespace ptsim::workload {

enum class OpKind : std::uint8_t {
  Matmul,       // GEMM or batched GEMM on tensor cores
  MemoryBound,  // elementwise, norm, softmax, gather/scatter
  Attention,    // fused (FlashAttention-style) attention, forward or backward
  Collective,   // a collective over one of the rank's groups
  Send,         // point-to-point send to the next rank of the group's ring
  Recv,         // point-to-point receive from the previous rank of the group's ring
};

/// Which group a communication op runs over (the workload builder maps each
/// to a stream, a communicator slot and a report category).
enum class CommGroup : std::uint8_t {
  TensorParallel,        // dense layers' TP group
  ContextParallel,       // the CP ring (sends to the next CP rank, receives from the previous)
  ExpertParallel,        // MoE token dispatch and combine
  ExpertTensorParallel,  // TP inside the experts
};

/// Bytes as a task counts them: rounded, and refused (ConfigError) beyond
/// 2^53 — 8 PiB, past which doubles stop counting bytes exactly and sums of
/// them could overflow 64 bits. Only absurd models or batches get there.
std::uint64_t as_bytes(double bytes);

struct OpSpec {
  std::string name;             // e.g. "attn.qkv", "mlp.fc1.wgrad"
  OpKind kind = OpKind::MemoryBound;
  taskgraph::KernelClass kernel = taskgraph::KernelClass::Elementwise;
  Dtype dtype = Dtype::Bf16;    // of a GEMM's inputs
  std::array<std::uint32_t, 4> shape{};  // see taskgraph::Task::shape
  std::uint8_t flags = 0;       // attention: taskgraph::kCausal, kBackwardPass
  std::uint32_t host_ops = 0;   // taskgraph::Task::host_ops
  /// The layer region a per-layer CUDA graph would capture the op in
  /// (strategy::CudaGraphModules' bits; 0: outside every layer region), and
  /// how the host issues it once the run's captures are known
  /// (mark_graph_replays).
  std::uint8_t graph_region = 0;
  taskgraph::HostIssue host_issue = taskgraph::HostIssue::Eager;
  double flops = 0;             // matmul FLOP, model convention (zero for memory-bound kinds)
  std::uint64_t bytes = 0;      // HBM traffic, or the communication payload (nccl-tests' size)
  std::uint64_t saved_bytes = 0;  // forward ops: tensors kept until the backward pass
  std::uint64_t freed_bytes = 0;  // backward ops: saved tensors released when it ends
  // ---- communication ops ----
  taskgraph::CollectiveKind collective = taskgraph::CollectiveKind::None;
  CommGroup group = CommGroup::TensorParallel;
  /// Which kernel consumes a collective's or receive's result: by default the
  /// next one waits for it; `async`: the one after next (the op in between —
  /// a weight-gradient GEMM, or an attention block of ring attention — runs
  /// beside the communication, as Megatron-LM's async gradient all-reduce);
  /// `detached`: no kernel of the block (what consumes it says so with `after`).
  bool async = false;
  bool detached = false;
  /// Also waits for op `after` (index in the same list) — and, for a
  /// communication op, for nothing else: no implicit wait for the last kernel.
  int after = -1;
  // ---- roles, for schedules and recomputation ----
  /// Backward ops computing weight gradients only (zero-bubble schedules run
  /// them later as W; the rest of the backward is B).
  bool weight_grad = false;
  /// Selective recomputation (strategy/recompute_modules.hpp): a forward op
  /// of a module in `rerun_by` runs again before its layer's backward; under
  /// a module of `drops`, the op does not keep those bytes of what it saves
  /// (the rerun makes them again). E.g. fused attention: rerun by core_attn,
  /// which drops its softmax statistics; mla_up_proj drops its Q, K and V.
  strategy::RecomputeModules rerun_by = 0;
  struct Drop {
    strategy::RecomputeModules modules = 0;
    std::uint64_t bytes = 0;
  };
  std::vector<Drop> drops;
  /// Bytes held beyond saved_bytes (forward op) and released beyond
  /// freed_bytes (its backward op) only while a module of `modules` is
  /// recomputed: a checkpoint that saves a view pins the view's whole
  /// buffer (memory-oracle finding A7: under core_attn, the value view pins
  /// the QKV projection's output beside the post-RoPE query and key).
  std::vector<Drop> holds;
  /// Fine-grained activation offloading: what the op saves is the input of
  /// these offload modules (strategy::kOffload* bits), a tensor of
  /// `offload_elements` elements (what min_offloaded_tensor_size compares).
  std::uint8_t offload_modules = 0;
  double offload_elements = 0;
  /// What the op's rerun does not keep when `selected` modules are recomputed.
  std::uint64_t dropped_bytes(strategy::RecomputeModules selected) const {
    std::uint64_t dropped = 0;
    for (const Drop& d : drops)
      if (d.modules & selected) dropped += d.bytes;
    return dropped >= saved_bytes ? saved_bytes : dropped;
  }
  /// What a held buffer adds when `selected` modules are recomputed.
  std::uint64_t held_bytes(strategy::RecomputeModules selected) const {
    std::uint64_t held = 0;
    for (const Drop& d : holds)
      if (d.modules & selected) held += d.bytes;
    return held;
  }
  /// What the op keeps when `selected` modules are recomputed.
  std::uint64_t kept_bytes(strategy::RecomputeModules selected) const {
    return saved_bytes - dropped_bytes(selected) + held_bytes(selected);
  }
  /// What a backward op releases when `selected` modules are recomputed.
  std::uint64_t released_bytes(strategy::RecomputeModules selected) const { return freed_bytes + held_bytes(selected); }
};

/// The forward and backward ops of one building block, in issue order. The
/// backward list frees exactly what the forward list saves.
struct BlockOps {
  std::vector<OpSpec> forward;
  std::vector<OpSpec> backward;
};

/// A matmul C[m×n] = A[m×k]·B[k×n], `batch` times: 2mnk·batch FLOP; A and B
/// read in `dtype`, C written in bf16.
OpSpec matmul(std::string name, double m, double n, double k, double batch = 1,
              Dtype dtype = Dtype::Bf16);
/// A memory-bound kernel of class `kernel` moving `bytes`.
OpSpec memory_op(std::string name, double bytes,
                 taskgraph::KernelClass kernel = taskgraph::KernelClass::Elementwise);
/// Fused attention over `batch_heads` heads of `seq_q` queries against
/// `seq_kv` keys, head width `head_dim` (`v_head_dim` for values and output),
/// bf16. FLOP in the model's convention: 2·b·h·s_q·s_kv·(d + d_v) forward
/// (QKᵀ and PV; causal masking not subtracted), twice that backward. Bytes:
/// Q, K, V and O read or written once (flash attention keeps the scores on
/// chip); `kv_heads_ratio` = key/value heads over query heads.
OpSpec attention_op(std::string name, double batch_heads, double seq_q, double seq_kv, double head_dim,
                    double v_head_dim, double kv_heads_ratio, bool causal, bool backward);
/// The compute task of a kernel op (kind, class, shape, flags, dtype, FLOP,
/// bytes); streams, names and memory are the builder's.
taskgraph::Task kernel_task(const OpSpec& op);

/// Without gradient-accumulation fusion, the backward hook that adds a
/// weight's bf16 gradient into its main gradient (Megatron-LM 2021,
/// megatron/model/distributed.py: `param.main_grad.add_(param.grad.data)`):
/// reads 2 + `main_grad_bytes` and writes `main_grad_bytes` bytes per weight
/// element. A weight-gradient op (zero-bubble schedules run it with W).
OpSpec gradient_accumulation_op(std::string name, double weight_elements, int main_grad_bytes);
/// Puts a gradient_accumulation_op after every weight-gradient GEMM of `ops`
/// (its weight: the GEMM's m·n·batch output), renumbering OpSpec::after.
/// An async collective before the GEMM is then consumed by the accumulation,
/// as in Megatron-LM, whose linear waits for its reduction before autograd
/// runs the hook.
void accumulate_after_weight_gradients(std::vector<OpSpec>& ops, int main_grad_bytes);

/// Per-layer CUDA graphs: the ops of `ops` whose region is among `captured`
/// replay inside a graph (HostIssue::InGraph), the first of each run of
/// consecutive captured ops starting its replay (HostIssue::GraphLaunch);
/// the rest stay eager. Run on a block's forward and backward lists apart:
/// Transformer Engine's graphed callables replay a forward and a backward
/// graph for each capture.
void mark_graph_replays(std::vector<OpSpec>& ops, std::uint8_t captured);

/// A collective of `kind` over `group`, `bytes` in nccl-tests' convention.
OpSpec collective_op(std::string name, taskgraph::CollectiveKind kind, CommGroup group, double bytes,
                     bool async = false);

}  // namespace ptsim::workload

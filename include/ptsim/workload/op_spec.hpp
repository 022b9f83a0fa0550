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
#include "ptsim/taskgraph/task.hpp"

namespace ptsim::workload {

enum class OpKind : std::uint8_t {
  Matmul,       // GEMM or batched GEMM on tensor cores
  MemoryBound,  // elementwise, norm, softmax, gather/scatter
  Attention,    // fused (FlashAttention-style) attention, forward or backward
  TpAllReduce,  // all-reduce over the tensor-parallel group
};

struct OpSpec {
  std::string name;             // e.g. "attn.qkv", "mlp.fc1.wgrad"
  OpKind kind = OpKind::MemoryBound;
  taskgraph::KernelClass kernel = taskgraph::KernelClass::Elementwise;
  Dtype dtype = Dtype::Bf16;    // of a GEMM's inputs
  std::array<std::uint32_t, 4> shape{};  // see taskgraph::Task::shape
  std::uint8_t flags = 0;       // attention: taskgraph::kCausal, kBackwardPass
  double flops = 0;             // matmul FLOP, model convention (zero for memory-bound kinds)
  std::uint64_t bytes = 0;      // HBM traffic, or the all-reduce payload
  std::uint64_t saved_bytes = 0;  // forward ops: tensors kept until the backward pass
  std::uint64_t freed_bytes = 0;  // backward ops: saved tensors released when it ends
  /// Backward all-reduces of input gradients run beside the next op (the
  /// weight-gradient GEMM), as Megatron-LM's async gradient all-reduce; the
  /// op after that waits for them.
  bool async = false;
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
/// Fused attention over `batch_heads` heads of `seq` queries and keys of width
/// `head_dim`, bf16. FLOP in the model's convention: 4·b·h·s²·d forward (QKᵀ
/// and PV at 2·s²·d each, causal masking not subtracted), twice that backward.
/// Bytes: Q, K, V and O read or written once (flash attention keeps the
/// s×s scores on chip).
OpSpec attention_op(std::string name, double batch_heads, double seq, double head_dim,
                    double kv_heads_ratio, bool causal, bool backward);

}  // namespace ptsim::workload

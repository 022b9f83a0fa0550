// OpSpec: one operation of a training step as the framework issues it — a
// kernel (matmul or memory-bound) or a tensor-parallel all-reduce — with its
// work and the memory it holds for the backward pass. The workload builder
// turns OpSpecs into Tasks; nothing here knows about time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptsim::workload {

enum class OpKind : std::uint8_t {
  Matmul,       // GEMM or batched GEMM on tensor cores
  MemoryBound,  // elementwise, norm, softmax, gather/scatter
  TpAllReduce,  // all-reduce over the tensor-parallel group
};

struct OpSpec {
  std::string name;             // e.g. "attn.qkv", "mlp.fc1.wgrad"
  OpKind kind = OpKind::MemoryBound;
  double flops = 0;             // matmul FLOP (zero for other kinds)
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

/// A matmul C[m×n] = A[m×k]·B[k×n] in 2-byte elements: 2mnk FLOP, A, B read and C written.
OpSpec matmul(std::string name, double m, double n, double k, double batch = 1);
/// A memory-bound kernel moving `bytes`.
OpSpec memory_op(std::string name, double bytes);

}  // namespace ptsim::workload

// ptsim's fused attention kernels (FlashAttention-2's algorithm on WMMA
// tensor-core tiles; see attention_kernels.cu) as the attention benchmark
// and its check call them: the tensors of one problem, a forward pass that
// leaves the softmax statistics, a backward pass that reads them.
#pragma once

#include <cuda_bf16.h>

#include <cstddef>

#include "common.cuh"

namespace ptsim::microbench::cuda {

inline constexpr int kAttentionBlock = 64;  // sequence lengths are a multiple of it

/// One problem's tensors: batch·heads × seq rows of head_dim bf16 values
/// each (n values), fp32 softmax statistics and dQ accumulator.
struct AttentionTensors {
  DeviceBuffer<__nv_bfloat16> q, k, v, o, dout, dk, dv, dq;
  DeviceBuffer<float> l, dvec, dq_accum;
  AttentionTensors(std::size_t n, std::size_t rows)
      : q(n), k(n), v(n), o(n), dout(n), dk(n), dv(n), dq(n), l(rows), dvec(rows), dq_accum(n) {}
};

/// Raises the kernels' shared-memory limit; once per process, before any launch.
void prepare_attention_kernels();
/// O and the statistics from Q, K, V (head_dim 64 or 128).
void attention_forward(AttentionTensors& t, std::size_t batch_heads, int seq, int head_dim, bool causal);
/// dQ, dK, dV from dO and the forward pass's O and statistics.
void attention_backward(AttentionTensors& t, std::size_t batch_heads, int seq, int head_dim, bool causal);

}  // namespace ptsim::microbench::cuda

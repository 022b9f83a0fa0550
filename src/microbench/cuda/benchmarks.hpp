// The micro-benchmarks ptsim-microbench runs, one function family per file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../harness.hpp"

namespace ptsim::microbench::cuda {

/// cuBLASLt GEMM, D[m×n] = A[m×k]·B[k×n] (`batch` times), dtype bf16, fp16,
/// tf32 or fp8 (e4m3 inputs, bf16 output); the result is checked on sampled
/// entries against a double-precision reference before it is timed.
Result gemm(const std::string& dtype, std::uint64_t m, std::uint64_t n, std::uint64_t k,
            std::uint64_t batch, const Method& method);

/// Memory-bound kernels (elementwise, norm, softmax, optimizer, embedding) of
/// `bytes` read plus written; copies (copy = device to device, memcpy_h2d,
/// memcpy_d2h) of `bytes` moved.
Result memory(const std::string& op, std::uint64_t bytes, const Method& method);

/// ptsim's fused attention kernel (FlashAttention-2 style: tiled, online
/// softmax, no s×s tensor in memory), bf16, forward or backward.
Result attention(std::uint64_t batch_heads, std::uint64_t seq, std::uint64_t head_dim, bool causal,
                 bool backward, const Method& method);

/// NCCL collectives over every visible GPU (empty when fewer than two).
std::vector<Result> collectives(const std::vector<std::uint64_t>& sizes, const Method& method);

}  // namespace ptsim::microbench::cuda

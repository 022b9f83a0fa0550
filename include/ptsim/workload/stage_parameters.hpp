// Parameters one rank holds, and the static memory they cost: what sits in
// HBM before the first micro-batch starts. Mixed-precision Adam as the ZeRO
// paper counts it (Rajbhandari et al. 2020 §3.1): bf16 weights (2 bytes),
// bf16 gradients (2) and fp32 master weights, momentum and variance (12):
// 16 bytes per parameter without optimizer sharding.
#pragma once

#include <cstdint>

#include "ptsim/model/model_spec.hpp"

namespace ptsim::workload {

/// Parameters of one transformer layer on one TP rank: the column- and
/// row-parallel matrices and the column-parallel biases are split t ways;
/// row-parallel biases and norms are replicated.
std::int64_t layer_parameters_per_rank(const model::ModelSpec& m, std::int64_t tp);

/// Word embedding slice (V/t rows) plus replicated learned positions.
std::int64_t embedding_parameters_per_rank(const model::ModelSpec& m, std::int64_t tp);

/// Final norm plus the LM head slice. A tied head still needs its own copy on
/// the last stage when the embedding lives on another stage (pp > 1).
std::int64_t output_parameters_per_rank(const model::ModelSpec& m, std::int64_t tp,
                                        std::int64_t pp);

struct StaticMemory {
  std::int64_t parameters = 0;
  std::uint64_t params_bytes = 0;     // bf16 weights
  std::uint64_t grads_bytes = 0;      // bf16 gradients
  std::uint64_t optimizer_bytes = 0;  // fp32 master weights and Adam moments
  std::uint64_t total_bytes() const { return params_bytes + grads_bytes + optimizer_bytes; }
};

StaticMemory static_memory(std::int64_t parameters);

}  // namespace ptsim::workload

// The ops Megatron-LM runs for one transformer layer on one tensor-parallel
// rank, forward and backward, with their FLOP, HBM bytes and saved tensors.
// The saved tensors follow Korthikanti et al. 2022 (§4.1), so that a GPT layer
// with dropout and TP t saves s·b·h·(10 + 24/t + 5·a·s/(h·t)) bytes.
#pragma once

#include <cstdint>

#include "ptsim/model/model_spec.hpp"
#include "ptsim/workload/op_spec.hpp"

namespace ptsim::workload {

/// Shape of the work one rank does for one micro-batch.
struct MicroShape {
  std::int64_t micro_batch = 1;  // b, sequences
  std::int64_t seq_length = 1;   // s
  std::int64_t tp = 1;           // t
};

/// Forward and backward ops of one transformer layer (attention + MLP).
/// The first forward op saves exactly the layer input (2·s·b·h bytes), which
/// is what full recomputation keeps instead of everything else.
BlockOps transformer_layer_ops(const model::ModelSpec& m, const MicroShape& shape);

}  // namespace ptsim::workload

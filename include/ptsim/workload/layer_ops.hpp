// The ops Megatron-LM runs for one transformer layer on one tensor-parallel
// rank, forward and backward, with their FLOP, HBM bytes and saved tensors.
// The saved tensors follow Korthikanti et al. 2022 (§4.1), so that a GPT layer
// with dropout and TP t saves s·b·h·(10 + 24/t + 5·a·s/(h·t)) bytes with the
// unfused attention they analyse; fused (flash) attention keeps no s×s tensor
// and saves s·b·h·(10 + 24/t) plus its softmax statistics.
#pragma once

#include <cstdint>

#include "ptsim/common/dtype.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/workload/op_spec.hpp"

namespace ptsim::workload {

/// Shape of the work one rank does for one micro-batch.
struct MicroShape {
  std::int64_t micro_batch = 1;  // b, sequences
  std::int64_t seq_length = 1;   // s
  std::int64_t tp = 1;           // t
  bool flash_attention = true;   // fused attention kernels; false: Megatron's unfused path
  Dtype gemm_dtype = Dtype::Bf16;  // inputs of the layers' linear GEMMs (fp8 under FP8 training)
};

/// Forward and backward ops of one transformer layer (attention + MLP).
/// The first forward op saves exactly the layer input (2·s·b·h bytes), which
/// is what full recomputation keeps instead of everything else.
BlockOps transformer_layer_ops(const model::ModelSpec& m, const MicroShape& shape);

}  // namespace ptsim::workload

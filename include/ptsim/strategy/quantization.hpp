// How Transformer Engine quantizes the operands of a linear layer's GEMMs
// under each low-precision recipe, as bytes per element of the bf16 tensor:
// the one place the workload builder and the run checks read a recipe's memory traffic from.
//
// Per-tensor recipes (delayed, tensorwise) keep one scale per tensor, so the
// column-wise copy a weight-gradient GEMM needs is the row-wise one
// transposed. Block-scaled recipes (blockwise: fp32 scales per 1×128 or
// 128×128 block; MXFP8: an E8M0 scale per 32 elements) scale along one
// direction, so a tensor needed both ways is quantized twice from bf16, by
// one kernel (Transformer Engine at d0067d0da6: MXFP8BlockScaling and
// Float8BlockScaling in common/recipe/__init__.py, one nvte_quantize_v2 call
// in csrc/quantizer.cpp; docs/.../mxfp8.rst: "rowwise and columnwise MXFP8
// tensors are numerically different ... Both must be quantized
// independently").
#pragma once

#include "ptsim/common/dtype.hpp"
#include "ptsim/strategy/parallel_config.hpp"

namespace ptsim::strategy {

struct Quantization {
  bool active = false;      // the linears' GEMMs run in a low-precision format
  bool per_tensor = false;  // one scale per tensor: the column-wise copy is a transpose
  bool delayed = false;     // scales from amax histories: a norm before a linear writes its quantized copy
  /// Bytes per element of one quantized copy with its scales: 1 per tensor;
  /// 1 + 1/32 for MXFP8 (a 1-byte scale per 32) and blockwise (a 4-byte
  /// scale per 128).
  double copy_bytes = 2;
  /// Bytes read per element by an amax pass before a cast (current scaling).
  double amax_bytes = 0;
  /// Bytes per element of the pass that turns a gathered copy into the
  /// column-wise operand: the transpose of a per-tensor copy (read 1, write
  /// 1); blockwise's swap of the gathered column-wise data's first dimensions
  /// (tex.swap_first_dims, distributed.py _finish_all_gather_fp8_blockwise);
  /// none for MXFP8, whose column-wise copy is gathered as it is.
  double after_gather_bytes = 0;
  /// Transformer Engine's TP communication overlap (userbuffers) takes the
  /// recipe's tensors (base.py fill_userbuffers_buffer_for_all_gather:
  /// per-tensor FP8 and MXFP8; blockwise raises "Unsupported quantizer for
  /// Userbuffers").
  bool userbuffers = true;
  /// Megatron-Core's --fp8-param-gather moves the quantized row-wise copy (1
  /// byte a weight); under MXFP8 it gathers bf16 through the gradient buffer
  /// and every rank casts the whole weight after (arguments.py: "MXFP8 params
  /// cannot be mapped into the contiguous param buffer").
  bool param_gather_quantized = true;

  /// A tensor cast for a GEMM and its transposed partner: read 2 (after an
  /// amax pass under current scaling), write both copies.
  double cast_bytes() const { return 2 + amax_bytes + 2 * copy_bytes; }
  /// A shard quantized before its all-gather: the row-wise copy alone per
  /// tensor (its transpose follows the gather); both copies when block-scaled.
  double shard_cast_bytes() const { return 2 + (per_tensor ? 1 : 2) * copy_bytes; }
  /// Copies the all-gather of a row-parallel output gradient moves: the
  /// row-wise one per tensor, both when block-scaled (linear.py sets both
  /// usages before the gather).
  double grad_gather_copies() const { return per_tensor ? 1 : 2; }
};

/// The quantization of a run's precision and recipe (none under bf16).
Quantization quantization_of(Dtype precision, Fp8Recipe recipe);

}  // namespace ptsim::strategy

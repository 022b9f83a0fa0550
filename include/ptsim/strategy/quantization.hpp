// How Transformer Engine quantizes the operands of a linear layer's GEMMs
// under each low-precision recipe, as bytes per element of the bf16 tensor:
// the one place the workload builder and the run checks read a recipe's
// memory traffic from.
//
// Per-tensor recipes (delayed, tensorwise) keep one scale per tensor, so the
// column-wise copy a weight-gradient GEMM needs is the row-wise one
// transposed. Block-scaled recipes (blockwise: fp32 scales per 1×128 or
// 128×128 block; MXFP8: an E8M0 scale per 32 elements; NVFP4: an E4M3 scale
// per 16 and an fp32 one per tensor) scale along one direction, so a tensor
// needed both ways is quantized twice from bf16 (Transformer Engine at
// d0067d0da6: the recipes in common/recipe/__init__.py, their quantizers in
// csrc/quantizer.cpp; docs/.../mxfp8.rst: "rowwise and columnwise MXFP8
// tensors are numerically different ... Both must be quantized
// independently").
#pragma once

#include <string_view>

#include "ptsim/common/dtype.hpp"
#include "ptsim/strategy/parallel_config.hpp"

namespace ptsim::strategy {

struct Quantization {
  bool active = false;      // the linears' GEMMs run in a low-precision format
  std::string_view tag = "fp8";  // names the recipe's kernels: "fp8" or "fp4"
  bool per_tensor = false;  // one scale per tensor: the column-wise copy is a transpose
  /// Per tensor on a GPU whose FP8 GEMMs take any layout (Blackwell): the
  /// row-wise copy serves both ways, and no transpose is made or kept
  /// (Transformer Engine's quantizers at d0067d0da6, csrc/quantizer.cpp:
  /// "with_transpose = columnwise_usage && !is_non_tn_fp8_gemm_supported").
  bool one_copy = false;
  bool delayed = false;     // scales from amax histories: a norm before a linear writes its quantized copy
  /// Bytes per element of one quantized copy with its scales: 1 per tensor;
  /// 1 + 1/32 for MXFP8 (a 1-byte scale per 32) and blockwise (a 4-byte
  /// scale per 128); 1/2 + 1/16 for NVFP4 (two values a byte, a 1-byte scale
  /// per 16).
  double copy_bytes = 2;
  /// Bytes read per element by the amax pass before a cast: current
  /// scaling's nvte_compute_amax; NVFP4's, which for inputs and gradients
  /// also takes the amax of their Hadamard transform
  /// (nvte_hadamard_transform_amax, one read).
  double amax_bytes = 0;
  /// The norm fused before a linear hands its amax over with its bf16
  /// output (current scaling's FUSED_NORM_AMAX_FP8); NVFP4's Hadamard amax
  /// is the quantizer's own (normalization.cpp: UNFUSED with RHT).
  bool norm_gives_amax = false;
  /// Bytes of the amaxes a gathered shard all-reduces over TP before its
  /// cast, so that every shard shares one scale: 4 under current scaling,
  /// 8 under NVFP4 (row-wise and column-wise); block scales need none.
  double tp_amax_bytes = 0;
  /// Bytes per element of the pass that turns a gathered copy into the
  /// column-wise operand: the transpose of a per-tensor copy (read 1, write
  /// 1); blockwise's and NVFP4's swap of the gathered column-wise data's
  /// first dimensions (tex.swap_first_dims, distributed.py
  /// _finish_all_gather_fp8_blockwise and _post_process_nvfp4_gather); none
  /// for MXFP8, whose column-wise copy is gathered as it is.
  double after_gather_bytes = 0;
  /// Transformer Engine's TP communication overlap (userbuffers) takes the
  /// recipe's tensors (base.py fill_userbuffers_buffer_for_all_gather:
  /// per-tensor FP8 and MXFP8; the others raise "Unsupported quantizer for
  /// Userbuffers").
  bool userbuffers = true;
  /// Bytes a layer weight is gathered in under Megatron-Core's
  /// --fp8-param-gather (--fp4-param-gather): the quantized row-wise data;
  /// MXFP8's gather moves bf16 through the gradient buffer and every rank
  /// casts the whole weight after (arguments.py: "MXFP8 params cannot be
  /// mapped into the contiguous param buffer").
  double param_gather_bytes = 1;
  /// Bytes per weight of the pass that makes the column-wise copy of a
  /// gathered weight (read the row-wise data, write the column-wise data):
  /// 2 for the fp8 recipes, 1 for NVFP4's packed data.
  double param_transpose_bytes = 2;
  /// Each copy is cast from bf16 on its own passes, its own amax and its own
  /// read (torchao's row-wise recipe, whose two directions are two
  /// reductions); otherwise one read of the bf16 writes every copy.
  bool casts_each_copy = false;
  /// The input- and weight-gradient GEMMs' outputs are rescaled by a kernel
  /// of their own (read and write 2 bytes an element): torchao's row-wise
  /// recipe runs them as cuBLAS's per-tensor GEMM at unit scales and
  /// multiplies in the row and column scales after (float8_python_api.py
  /// addmm_float8_unwrapped, pytorch/ao PR #1325: "The rowwise
  /// CUTLASS-based kernel is so slow without fast-accum that we'd rather use
  /// the tensorwise cuBLAS-based kernel and do the scaling manually
  /// afterwards"; Inductor emits one kernel per GEMM for it, pytorch/ao
  /// issue #2184).
  bool rescales_gradient_gemms = false;
  /// Weights per amax of the shard cast after the optimizer under parameter
  /// gathering: 0 is one per weight tensor (per-tensor recipes); 128·128
  /// under blockwise, 16·16 under NVFP4's 2D weight blocks
  /// (_cast_master_weights_to_fp8_blockwise_scaling, _cast_master_weights_to_nvfp4_2d).
  double param_amax_block = 0;

  /// Quantized copies a tensor needed both ways has: its row-wise and its
  /// column-wise one, or the one that serves both.
  double copies() const { return one_copy ? 1 : 2; }
  /// A per-tensor copy's transpose is made (a TN-only GPU).
  bool transposes() const { return per_tensor && !one_copy; }
  /// A tensor cast for a GEMM and its transposed partner: read 2 (after an
  /// amax pass where the recipe reads one), write its copies.
  double cast_bytes() const {
    return casts_each_copy ? copies() * (2 + amax_bytes + copy_bytes) : 2 + amax_bytes + copies() * copy_bytes;
  }
  /// The same for a fused norm's output: its amax came with it where the
  /// norm gives one (delayed scaling only transposes, see the layer builder).
  double norm_output_cast_bytes() const { return norm_gives_amax ? 2 + copies() * copy_bytes : cast_bytes(); }
  /// A shard quantized before its all-gather: the row-wise copy alone per
  /// tensor (its transpose follows the gather); both copies when block-scaled.
  double shard_cast_bytes() const { return 2 + (per_tensor ? 1 : 2) * copy_bytes; }
  /// Copies the all-gather of a row-parallel output gradient moves: the
  /// row-wise one per tensor, both when block-scaled (linear.py sets both
  /// usages before the gather).
  double grad_gather_copies() const { return per_tensor ? 1 : 2; }
  /// The gather moves the quantized data, not bf16.
  bool param_gather_quantized() const { return param_gather_bytes < 2; }

  friend bool operator==(const Quantization&, const Quantization&) = default;
};

/// The quantization of a run's precision and recipe (none under bf16), on a
/// GPU whose FP8 GEMMs take any layout or not.
Quantization quantization_of(Dtype precision, Fp8Recipe recipe, bool any_layout = false);
/// The same for a strategy: its precision and recipe on its GPU
/// (ParallelConfig::fp8_any_layout), what the workload builder reads.
inline Quantization quantization_of(const ParallelConfig& c) {
  return quantization_of(c.precision, c.fp8_recipe, c.fp8_any_layout);
}
/// The quantization of a module module_precision runs in a format of its
/// own (ParallelConfig::module_precision): MXFP8's under Dtype::Mxfp8 (the
/// module's Transformer Engine recipe), none under bf16.
inline Quantization module_quantization_of(Dtype format, bool any_layout) {
  return format == Dtype::Mxfp8 ? quantization_of(Dtype::Fp8, Fp8Recipe::Mxfp8, any_layout) : Quantization{};
}

}  // namespace ptsim::strategy

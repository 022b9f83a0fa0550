// Each recipe's quantization bytes (see quantization.hpp).
#include "ptsim/strategy/quantization.hpp"

namespace ptsim::strategy {

Quantization quantization_of(Dtype precision, Fp8Recipe recipe, bool any_layout) {
  Quantization q;
  if (precision == Dtype::Nvfp4) {
    // NVFP4BlockScaling: inputs and gradients get a Hadamard-transform amax
    // pass, then one fused cast both ways (stochastic rounding on the
    // gradients, inside the cast); weights a plain amax pass and a cast.
    q.active = true;
    q.tag = "fp4";
    q.copy_bytes = 0.5 + 1.0 / 16;
    q.amax_bytes = 2;
    q.tp_amax_bytes = 8;
    q.after_gather_bytes = 2 * q.copy_bytes;
    q.userbuffers = false;
    q.param_gather_bytes = 0.5;
    q.param_transpose_bytes = 1;
    q.param_amax_block = 16 * 16;
    return q;
  }
  if (precision != Dtype::Fp8) return q;
  q.active = true;
  switch (recipe) {
    case Fp8Recipe::Delayed:
      q.per_tensor = q.delayed = true;
      q.copy_bytes = 1;
      q.after_gather_bytes = 2;
      break;
    case Fp8Recipe::Tensorwise:
      q.per_tensor = true;
      q.copy_bytes = 1;
      q.amax_bytes = 2;
      q.norm_gives_amax = true;
      q.tp_amax_bytes = 4;
      q.after_gather_bytes = 2;
      break;
    case Fp8Recipe::Blockwise:
      q.copy_bytes = 1 + 4.0 / 128;
      q.after_gather_bytes = 2;
      q.userbuffers = false;
      q.param_amax_block = 128 * 128;
      break;
    case Fp8Recipe::Mxfp8:
      q.copy_bytes = 1 + 1.0 / 32;
      q.param_gather_bytes = 2;
      break;
    case Fp8Recipe::Rowwise:
      // torchao's Float8Linear with axiswise casts (float8_linear.py
      // matmul_with_hp_or_float8_args): each operand is cast along the
      // direction of the GEMM that takes it, an amax pass and a cast for
      // each, from bf16 both times; its fp32 scale a row, 4 bytes for K
      // elements, is not counted.
      q.copy_bytes = 1;
      q.amax_bytes = 2;
      q.casts_each_copy = true;
      q.rescales_gradient_gemms = true;
      break;
  }
  // One copy serves both ways: nothing to transpose after a gather, nor of
  // a gathered weight.
  if (q.per_tensor && any_layout) {
    q.one_copy = true;
    q.after_gather_bytes = 0;
    q.param_transpose_bytes = 0;
  }
  return q;
}

}  // namespace ptsim::strategy

// Each recipe's quantization bytes (see quantization.hpp).
#include "ptsim/strategy/quantization.hpp"

namespace ptsim::strategy {

Quantization quantization_of(Dtype precision, Fp8Recipe recipe) {
  Quantization q;
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
      q.after_gather_bytes = 2;
      break;
    case Fp8Recipe::Blockwise:
      q.copy_bytes = 1 + 4.0 / 128;
      q.after_gather_bytes = 2;
      q.userbuffers = false;
      break;
    case Fp8Recipe::Mxfp8:
      q.copy_bytes = 1 + 1.0 / 32;
      q.param_gather_quantized = false;
      break;
  }
  return q;
}

}  // namespace ptsim::strategy

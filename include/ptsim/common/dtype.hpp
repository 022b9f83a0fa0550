// Numeric formats a training step computes and stores in, with their sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ptsim {

/// Fp8: e4m3/e5m2 with one scale per tensor. Mxfp8 and Nvfp4 are the
/// block-scaled formats Blackwell's tensor cores multiply natively (MXFP8:
/// fp8 data, an E8M0 scale per 32 elements; NVFP4: E2M1 data, an E4M3 scale
/// per 16 elements and an fp32 scale per tensor): a GEMM's dtype selects the
/// tensor-core rate it runs at.
enum class Dtype : std::uint8_t { Bf16, Fp16, Tf32, Fp32, Fp8, Mxfp8, Nvfp4 };

inline constexpr int kNumDtypes = 7;

/// Bytes one element's data occupies in memory (tf32 is stored as fp32; a
/// block-scaled format's scales are not counted: see strategy::Quantization).
constexpr double bytes_of(Dtype d) {
  switch (d) {
    case Dtype::Bf16:
    case Dtype::Fp16: return 2;
    case Dtype::Tf32:
    case Dtype::Fp32: return 4;
    case Dtype::Fp8:
    case Dtype::Mxfp8: return 1;
    case Dtype::Nvfp4: return 0.5;
  }
  return 0;
}

std::string_view to_string(Dtype d);
/// Parses "bf16", "fp16", "tf32", "fp32", "fp8", "mxfp8", "nvfp4"; empty when unknown.
std::optional<Dtype> parse_dtype(std::string_view text);

}  // namespace ptsim

// Numeric formats a training step computes and stores in, with their sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ptsim {

enum class Dtype : std::uint8_t { Bf16, Fp16, Tf32, Fp32, Fp8 };

inline constexpr int kNumDtypes = 5;

/// Bytes one element occupies in memory (tf32 is stored as fp32).
constexpr std::uint64_t bytes_of(Dtype d) {
  switch (d) {
    case Dtype::Bf16:
    case Dtype::Fp16: return 2;
    case Dtype::Tf32:
    case Dtype::Fp32: return 4;
    case Dtype::Fp8: return 1;
  }
  return 0;
}

std::string_view to_string(Dtype d);
/// Parses "bf16", "fp16", "tf32", "fp32", "fp8"; empty when unknown.
std::optional<Dtype> parse_dtype(std::string_view text);

}  // namespace ptsim

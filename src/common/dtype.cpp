// Names of the numeric formats, for files and reports.
#include "ptsim/common/dtype.hpp"

#include <array>

namespace ptsim {

namespace {
constexpr std::array<std::string_view, kNumDtypes> kNames = {"bf16", "fp16", "tf32", "fp32", "fp8", "mxfp8", "nvfp4"};
}

std::string_view to_string(Dtype d) { return kNames[static_cast<std::size_t>(d)]; }

std::optional<Dtype> parse_dtype(std::string_view text) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == text) return static_cast<Dtype>(i);
  return std::nullopt;
}

}  // namespace ptsim

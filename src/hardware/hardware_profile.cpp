// Accessors of HardwareProfile that can fail on a GPU's missing features.
#include "ptsim/hardware/hardware_profile.hpp"

#include <fmt/format.h>

#include "ptsim/common/error.hpp"

namespace ptsim::hardware {

double GpuSpec::peak_flops(Dtype d) const {
  const auto& peak = peak_flops_per_s[static_cast<std::size_t>(d)];
  if (!peak) {
    // Block-scaled formats need tensor cores that multiply them: Transformer
    // Engine refuses MXFP8 and NVFP4 below compute capability 10.0
    // (quantization.py, _compute_mxfp8_support).
    const bool block_scaled = d == Dtype::Mxfp8 || d == Dtype::Nvfp4;
    throw ConfigError(
        fmt::format("hardware: GPU {} has no {} peak rate (gpu.peak_tflops.{} is "
                    "absent); {}choose a precision the GPU supports",
                    name, to_string(d), to_string(d),
                    block_scaled ? "Blackwell's tensor cores (compute capability 10.x) multiply it, "
                                   "Hopper's do not; "
                                 : ""));
  }
  return *peak;
}

double GpuSpec::gemm_efficiency_for(Dtype d) const {
  const auto& e = gemm_efficiency[static_cast<std::size_t>(d)];
  return e ? *e : *gemm_efficiency[static_cast<std::size_t>(Dtype::Bf16)];
}

double SustainedRates::tensor_for(Dtype d) const {
  const auto& f = tensor[static_cast<std::size_t>(d)];
  if (f) return *f;
  const auto& bf16 = tensor[static_cast<std::size_t>(Dtype::Bf16)];
  return bf16 ? *bf16 : 1.0;
}

std::string to_string(FabricTopology t) {
  return t == FabricTopology::RailOptimized ? "rail_optimized" : "fat_tree";
}

}  // namespace ptsim::hardware

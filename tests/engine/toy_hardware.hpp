// The engine tests' hardware, whose figures make timings follow by hand:
// 1 TFLOP/s and 1 TB/s at full efficiency, no launch overhead, one SM, and
// 1 GB/s NVLink and NICs without latency.
#pragma once

#include <cstdint>
#include <optional>

#include "ptsim/hardware/hardware_profile.hpp"

namespace ptsim::test {

inline hardware::HardwareProfile toy_hardware(int gpus_per_node) {
  hardware::HardwareProfile hw;
  hw.name = "toy";
  hw.gpu.name = "toy";
  hw.gpu.peak_flops_per_s[static_cast<std::size_t>(Dtype::Bf16)] = 1e12;
  hw.gpu.memory_bytes = 1e9;
  hw.gpu.memory_bandwidth_bytes_per_s = 1e12;
  hw.gpu.gemm_efficiency[static_cast<std::size_t>(Dtype::Bf16)] = 1;
  hw.gpu.attention_forward_efficiency = 1;
  hw.gpu.attention_backward_efficiency = 1;
  hw.gpu.sm_count = 1;
  hw.gpu.memory_efficiency = 1;
  hw.gpus_per_node = gpus_per_node;
  hw.nvlink = {std::int64_t{gpus_per_node}, 1e9, 0, 1, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
  hw.nic = {1, 1e9, 0, 1, std::nullopt};
  return hw;
}

}  // namespace ptsim::test

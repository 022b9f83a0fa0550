// HardwareProfile: on what the model is trained — one GPU's rates and memory,
// the node, and the network tiers from NVLink outwards. SI units throughout;
// the loader (config/) converts the file's GB/s, µs and GiB once.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ptsim/common/dtype.hpp"

namespace ptsim::hardware {

struct GpuSpec {
  std::string name;
  /// Dense peak FLOP/s per dtype; empty where the GPU has no such unit.
  std::array<std::optional<double>, kNumDtypes> peak_flops_per_s{};
  double memory_bytes = 0;                 // usable HBM capacity
  double memory_bandwidth_bytes_per_s = 0; // HBM peak
  int sm_count = 0;
  double gemm_efficiency = 0;    // achievable fraction of peak for large GEMMs
  double memory_efficiency = 0;  // achievable fraction of HBM peak for streaming kernels
  double kernel_launch_overhead_s = 0;  // added to every kernel

  double peak_flops(Dtype d) const;  // throws ConfigError when the GPU lacks it
};

/// One level of the network: every GPU of a domain reaches every other of the
/// same domain through this tier. Tiers nest: each domain holds whole domains
/// of the tier inside it.
struct NetworkTier {
  std::string name;
  std::int64_t domain_gpus = 0;          // GPUs per domain; 0 = the whole cluster
  double bandwidth_bytes_per_s = 0;      // per GPU, per direction
  double latency_s = 0;                  // per algorithm step
  double efficiency = 0;                 // achieved fraction of bandwidth (NCCL bus bandwidth)
};

struct HardwareProfile {
  std::string name;         // file stem, e.g. "a100-sxm4-80gb"
  std::string description;
  GpuSpec gpu;
  int gpus_per_node = 0;
  double collective_base_latency_s = 0;  // fixed cost of one collective call
  std::vector<NetworkTier> tiers;        // innermost first; the last spans the cluster
  std::map<std::string, std::string> sources;  // JSON pointer → where the figure comes from
};

}  // namespace ptsim::hardware

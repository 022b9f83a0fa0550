// The declared fit parameters (see parameters.hpp).
#include "ptsim/fit/parameters.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "ptsim/common/error.hpp"
#include "ptsim/cost/nccl_latency.hpp"
#include "ptsim/strategy/parallel_config.hpp"

namespace ptsim::fit {

namespace {

using hardware::HardwareProfile;

hardware::SustainedRates& sustained(HardwareProfile& hw) {
  if (!hw.gpu.sustained) {
    hw.gpu.sustained.emplace();
    hw.gpu.sustained->tensor[static_cast<std::size_t>(Dtype::Bf16)] = 1.0;
  }
  return *hw.gpu.sustained;
}

std::optional<double>& tensor(HardwareProfile& hw, Dtype d) {
  return sustained(hw).tensor[static_cast<std::size_t>(d)];
}

double tensor_of(const HardwareProfile& hw, Dtype d) {
  return hw.gpu.sustained ? hw.gpu.sustained->tensor_for(d) : 1.0;
}

}  // namespace

const std::vector<Parameter>& parameters() {
  // Bounds are the loader's: a sustained fraction is at most the burst (1);
  // a bus efficiency at most the line rate. One parameter a block, laid out by hand:
  // clang-format off
  static const std::vector<Parameter> all = {
      {"sustained.tensor.bf16", {"/gpu/sustained/tensor/bf16", "/gpu/sustained/tensor/fp16"}, "",
       "fraction of the burst tensor-core rate bf16 and fp16 GEMMs and fused attention keep through a step", 0.05,
       1.0, Reach::Kernels, [](const HardwareProfile& hw) { return tensor_of(hw, Dtype::Bf16); },
       [](HardwareProfile& hw, double v) {
         tensor(hw, Dtype::Bf16) = v;
         // fp16 rides bf16's tensor cores; without a peak it has no GEMMs to slow down.
         if (hw.gpu.peak_flops_per_s[static_cast<std::size_t>(Dtype::Fp16)]) tensor(hw, Dtype::Fp16) = v;
       }},
      {"sustained.tensor.fp8", {"/gpu/sustained/tensor/fp8"}, "",
       "fraction of the burst tensor-core rate fp8 GEMMs keep through a step", 0.05, 1.0, Reach::Fp8Gemms,
       [](const HardwareProfile& hw) { return tensor_of(hw, Dtype::Fp8); },
       [](HardwareProfile& hw, double v) { tensor(hw, Dtype::Fp8) = v; }},
      {"sustained.memory", {"/gpu/sustained/memory"}, "",
       "fraction of the burst memory throughput memory-bound kernels keep through a step", 0.05, 1.0,
       Reach::Kernels, [](const HardwareProfile& hw) { return hw.gpu.sustained ? hw.gpu.sustained->memory : 1.0; },
       [](HardwareProfile& hw, double v) { sustained(hw).memory = v; }},
      {"nvlink.efficiency", {"/network/nvlink/efficiency"}, "",
       "NCCL ring bus bandwidth over the NVLink line rate inside a domain", 0.01, 1.0, Reach::NvlinkTier,
       [](const HardwareProfile& hw) { return hw.nvlink.efficiency; },
       [](HardwareProfile& hw, double v) { hw.nvlink.efficiency = v; }},
      {"nvlink.latency", {"/network/nvlink/latency_us"}, "us", "latency of one NVLink algorithm step", 0.0, 1e3,
       Reach::NvlinkTier, [](const HardwareProfile& hw) { return hw.nvlink.latency_s * 1e6; },
       [](HardwareProfile& hw, double v) { hw.nvlink.latency_s = v * 1e-6; }},
      {"nvlink.nvls_efficiency", {"/network/nvlink/nvls_efficiency"}, "",
       "NVLink SHARP all-reduce algorithm bandwidth over the NVLink line rate", 0.01, 1.0, Reach::NvlsTier,
       [](const HardwareProfile& hw) { return hw.nvlink.nvls_efficiency.value_or(0); },
       [](HardwareProfile& hw, double v) { hw.nvlink.nvls_efficiency = v; }},
      {"nvlink.nvls_latency", {"/network/nvlink/nvls_latency_us"}, "us",
       "fixed time of one NVLink SHARP operation (NVLS, NVLSTree's NVLink part)", 0.0, 1e4, Reach::NvlsTier,
       [](const HardwareProfile& hw) {
         return cost::LatencyModel(hw).step(true, cost::Algorithm::Nvls, cost::Protocol::Simple) * 1e6;
       },
       [](HardwareProfile& hw, double v) { hw.nvlink.nvls_latency_s = v * 1e-6; }},
      {"nic.efficiency", {"/network/nic/efficiency"}, "",
       "NCCL bus bandwidth over the NIC line rate between NVLink domains", 0.01, 1.0, Reach::NetworkTier,
       [](const HardwareProfile& hw) { return hw.nic.efficiency; },
       [](HardwareProfile& hw, double v) { hw.nic.efficiency = v; }},
      {"nic.latency", {"/network/nic/latency_us"}, "us", "latency of one inter-node algorithm step", 0.0, 1e3,
       Reach::NetworkTier, [](const HardwareProfile& hw) { return hw.nic.latency_s * 1e6; },
       [](HardwareProfile& hw, double v) { hw.nic.latency_s = v * 1e-6; }},
      {"host.overhead_us", {"/node/host_overhead_us"}, "us",
       "CPU time the framework spends issuing each kernel or collective (runs that set none)", 0.0, 1e4,
       Reach::Kernels,
       [](const HardwareProfile& hw) { return hw.host_overhead_s.value_or(strategy::kDefaultHostOverheadS) * 1e6; },
       [](HardwareProfile& hw, double v) { hw.host_overhead_s = v * 1e-6; }},
  };
  // clang-format on
  return all;
}

const Parameter& parameter(const std::string& name) {
  const auto& all = parameters();
  const auto it = std::find_if(all.begin(), all.end(), [&](const Parameter& p) { return p.name == name; });
  if (it == all.end()) {
    std::vector<std::string> names;
    for (const auto& p : all) names.push_back(p.name);
    throw ConfigError(fmt::format("'{}' is not a parameter ptsim fits; the parameters are {}", name,
                                  fmt::join(names, ", ")));
  }
  return *it;
}

std::string unreachable(const Parameter& p, const std::vector<Reach>& reached) {
  if (std::find(reached.begin(), reached.end(), p.reach) != reached.end()) return "";
  switch (p.reach) {
    case Reach::Kernels: return "no measurement runs a kernel";
    case Reach::Fp8Gemms: return "no run trains in fp8";
    case Reach::NvlinkTier: return "no measurement communicates between GPUs of one NVLink domain";
    case Reach::NetworkTier:
      return "it is a cross-node figure and every measurement stays inside one NVLink domain (single-node runs or "
             "logs)";
    case Reach::NvlsTier:
      return "no measurement runs an all-reduce NCCL may run with NVLink SHARP (NVLS inside one NVLink domain, "
             "NVLSTree across domains)";
  }
  return "";
}

std::vector<std::string> companions(const Parameter& p) {
  if (p.name.starts_with("sustained.")) return {"sustained.tensor.bf16", "sustained.memory"};
  return {};
}

}  // namespace ptsim::fit

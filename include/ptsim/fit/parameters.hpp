// The physical parameters `ptsim fit` may fit, declared once: each a figure
// of the hardware profile with its JSON pointer, its bounds, its meaning and
// what a run or a log must exercise before it can say anything about it.
// Nothing else in a profile is ever fitted.
#pragma once

#include <string>
#include <vector>

#include "ptsim/hardware/hardware_profile.hpp"

namespace ptsim::fit {

/// What a measurement must exercise to constrain a parameter.
enum class Reach {
  Kernels,      // any step: its kernels
  Fp8Gemms,     // a step with fp8 GEMMs
  NvlinkTier,   // communication between GPUs of one NVLink domain
  NetworkTier,  // communication between NVLink domains (across nodes)
  NvlsTier,     // NVLink SHARP collectives (nccl-tests on one domain)
};

struct Parameter {
  std::string name;                   // e.g. "sustained.tensor.bf16"
  std::vector<std::string> pointers;  // where it is written in the profile (the first is its own)
  std::string unit;                   // "" for a fraction, "us" for a latency
  std::string meaning;
  double lower = 0, upper = 0;        // in the profile's unit
  Reach reach = Reach::Kernels;
  /// Its value in a profile (1 for a sustained fraction of a profile that has
  /// none), and setting it (creating the sustained rates at burst if absent).
  double (*get)(const hardware::HardwareProfile&) = nullptr;
  void (*set)(hardware::HardwareProfile&, double) = nullptr;
};

/// Every parameter, in a fixed order.
const std::vector<Parameter>& parameters();

/// The parameter named `name`; throws ConfigError listing the names.
const Parameter& parameter(const std::string& name);

/// Why a parameter cannot be fitted from measurements that exercise only
/// `reached` (empty when it can): e.g. a cross-node figure from single-node runs.
std::string unreachable(const Parameter& p, const std::vector<Reach>& reached);

/// Figures the profile must carry with a fitted one: a sustained block needs
/// its bf16 tensor fraction and its memory fraction together.
std::vector<std::string> companions(const Parameter& p);

}  // namespace ptsim::fit

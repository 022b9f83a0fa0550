// The load a kernel runs under, and what it keeps of the burst rates there:
// short micro-benchmarks see a GPU at boost clock, a training step's seconds
// of continuous work see it at its power limit (hardware::SustainedRates).
#pragma once

#include "ptsim/common/dtype.hpp"
#include "ptsim/hardware/hardware_profile.hpp"

namespace ptsim::cost {

enum class Load { Burst, Sustained };

/// Fractions of the burst rates: tensor-core throughput and memory throughput.
struct RateScale {
  double tensor = 1;
  double memory = 1;
};

/// What a kernel of `dtype` keeps under `load`: 1 for a burst, or on a
/// profile without sustained rates.
RateScale rate_scale(const hardware::HardwareProfile& hw, Dtype dtype, Load load);

}  // namespace ptsim::cost

// Checking a profile against measurements, kernel by kernel: predicted and
// measured time and the signed error, sorted by its size, with the summary a
// CI bound is set on.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ptsim/cost/load.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/hardware/measurement_set.hpp"

namespace ptsim::calibrate {

struct KernelCheck {
  std::size_t index = 0;      // in the measurement file
  std::string op;
  std::string dtype;
  std::string shape;          // human-readable
  double measured_s = 0;
  double predicted_s = 0;
  double error_pct = 0;       // (predicted − measured) / measured · 100
};

struct CheckSummary {
  std::size_t count = 0;
  double median_abs_error_pct = 0;
  double mean_abs_error_pct = 0;
  double max_abs_error_pct = 0;
};

struct CheckReport {
  std::vector<KernelCheck> kernels;   // largest |error| first
  CheckSummary summary;
  std::size_t skipped = 0;            // unverified, or an op ptsim does not model
  std::size_t skipped_unverified = 0; // of those, unverified (--include-unverified checks them)
  std::size_t skipped_fitted = 0;     // fitted on by the profile's calibration, left out (--all checks them)
};

/// The profile's prediction for one measured kernel under `load` (the
/// measurements' own: sustained when they were taken after seconds of
/// continuous load); empty when ptsim does not model the op (host copies) or
/// the GPU lacks the dtype.
std::optional<double> predict(const hardware::KernelMeasurement& k, const hardware::HardwareProfile& hw,
                              cost::Load load);

/// Checks the held-out half of `m` (all of it when `all`).
CheckReport check(const hardware::MeasurementSet& m, const hardware::HardwareProfile& hw, bool all);

}  // namespace ptsim::calibrate

// The part of `ptsim fit` that step times and nccl-tests logs share: which
// declared parameters the measurements can identify, the least-squares fit
// of those on log(predicted / measured), and the record of what was fitted.
// Private to fit/.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ptsim/fit/least_squares.hpp"
#include "ptsim/fit/parameters.hpp"
#include "ptsim/hardware/hardware_profile.hpp"

namespace ptsim::fit::internal {

struct Measurements {
  std::vector<std::string> labels;  // one per point: a run id, a log line
  std::vector<Reach> reached;       // what the points exercise
  /// log(predicted / measured) of every point on a profile.
  std::function<Vector(const hardware::HardwareProfile&)> log_errors;
};

struct Thresholds {
  double min_sensitivity = 0.01;
  double min_independence = 0.1;
  /// Largest standard error of a fitted parameter's log (about its relative
  /// standard error) for it to count as pinned down.
  double max_log_error = 0.25;
};

struct CoreResult {
  hardware::HardwareProfile fitted;
  std::vector<hardware::FittedParameter> parameters;
  std::vector<hardware::RefusedParameter> refused;
  Vector before, after;  // log errors on the starting and the fitted profile
  int evaluations = 0;
};

/// Fits the `requested` parameters (every declared one when empty), refusing
/// with the reason what cannot be identified; with `strict`, a named one that
/// cannot be is a ConfigError.
CoreResult fit_parameters(const hardware::HardwareProfile& start, const Measurements& m,
                          const std::vector<std::string>& requested, bool strict, const Thresholds& thresholds,
                          const std::function<void(const std::string&)>& progress);

/// The record's median and largest |error| (percent) before and after, from
/// the points' log errors.
void record_errors(hardware::FitRecord& record, const Vector& before, const Vector& after);

}  // namespace ptsim::fit::internal

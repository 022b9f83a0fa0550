// `ptsim fit --runs`: the declared parameters of one hardware profile
// (fit/parameters.hpp) fitted to measured step times by least squares on
// log(predicted / measured). What each run left open is chosen as `ptsim
// validate` chooses it (the fastest that fits), on the starting profile and
// again on the fitted one until the choices hold; a parameter the runs cannot
// identify — one they do not exercise, one no run's step is sensitive to, one
// the runs cannot tell apart from another — is refused with the reason.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ptsim/config/load_runs.hpp"
#include "ptsim/config/load_software.hpp"
#include "ptsim/fit/parameters.hpp"
#include "ptsim/hardware/hardware_profile.hpp"

namespace ptsim::fit {

struct RunFitOptions {
  /// Parameters to fit; empty: every declared one, refusing quietly (with
  /// the reason in the result) those the runs cannot identify. Named ones the
  /// runs cannot identify are a ConfigError.
  std::vector<std::string> parameters;
  /// Named parameters the runs cannot identify: a ConfigError (true), or
  /// refused with the reason like unnamed ones (false: cross-validation,
  /// where some fits have less to go on than others).
  bool strict = true;
  /// Smallest largest |∂ log t / ∂ log θ| over the runs for θ to count as seen.
  double min_sensitivity = 0.01;
  /// A parameter whose sensitivities, after those of the parameters kept
  /// before it are projected out, keep less than this fraction of their
  /// length is confounded with them.
  double min_independence = 0.1;
  int max_rounds = 3;  // re-choosing what runs left open on the fitted profile
};

struct RunFitRow {
  std::string id;
  double measured_s = 0;
  double before_s = 0;  // on the starting profile
  double after_s = 0;   // on the fitted profile
  std::string chosen;   // what was chosen for its open fields, on the fitted profile
};

struct RunFitResult {
  hardware::FitRecord record;        // what the profile's "fit" block says
  hardware::HardwareProfile fitted;  // the starting profile with the fitted values
  std::vector<RunFitRow> rows;
  std::vector<std::string> left_out;  // runs on other profiles, or that could not be simulated, and why
  int rounds = 0;
  int evaluations = 0;                // simulations of the whole run set
};

/// Progress lines for a person (stderr).
using FitProgress = std::function<void(const std::string&)>;

/// Whether a run id matches one of the shell patterns (`--exclude`).
bool id_matches(const std::vector<std::string>& patterns, const std::string& id);

/// Fits `profile` to the runs of `runs` on it (run.hardware == profile.name).
/// Throws ConfigError when no run is on the profile, or a named parameter
/// cannot be identified.
RunFitResult fit_runs(const config::PublishedRuns& runs, const hardware::HardwareProfile& profile,
                      const std::vector<config::SoftwareProfile>& software, const RunFitOptions& options,
                      const FitProgress& progress = {});

}  // namespace ptsim::fit

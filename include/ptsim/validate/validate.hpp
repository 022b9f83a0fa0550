// Validation against published training runs: each run simulated with the
// values its source published, the software its framework ran
// (validation/software.json), and what it left open chosen as a practitioner
// would (plan::fastest_fitting); the predicted step time set against the
// measured one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ptsim/config/load_runs.hpp"
#include "ptsim/config/load_software.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/report/step_result.hpp"

namespace ptsim::validate {

struct RunCheck {
  std::string id;
  double measured_s = 0;
  std::optional<double> predicted_s;  // empty when the run could not be simulated
  double error_pct = 0;               // (predicted − measured) / measured · 100
  std::map<std::string, std::string> chosen;   // unpublished field → value chosen
  std::map<std::string, std::string> assumed;  // software setting → value (validation/software.json)
  std::string dominant;  // the largest part of the step, e.g. "compute 81%" or "exposed TP 14%"
  bool fits = true;      // the chosen strategy fits in memory
  std::size_t simulated = 0;
  std::string failure;   // why it could not be simulated
  report::StepResult result;
  /// The strategy simulated: published, the source's software, and the
  /// choices — complete, so that it can be simulated again on another profile.
  config::StrategyInput strategy;
};

struct Summary {
  std::size_t count = 0;  // runs with a prediction
  double median_abs_error_pct = 0;
  double mean_abs_error_pct = 0;
  double max_abs_error_pct = 0;
};

struct Report {
  std::string runs_file;
  std::vector<RunCheck> runs;
  Summary summary;
  std::size_t failures = 0;
};

/// Called before each run (index, total, id).
using Progress = std::function<void(std::size_t, std::size_t, const std::string&)>;

/// A run's hardware profile by name (a run file names profiles by file
/// stem); throws ConfigError when there is none.
using ProfileSource = std::function<hardware::HardwareProfile(const std::string& name)>;

/// Profiles read from `hw_dir`/<name>.json, each recorded in `read` (which
/// must outlive the source).
ProfileSource profiles_in(const std::string& hw_dir, config::InputFiles& read);

/// One run on `hw`: its source's software applied, what it left open chosen
/// as the fastest that fits, simulated.
RunCheck check_run(const config::PublishedRun& run, const hardware::HardwareProfile& hw,
                   const std::vector<config::SoftwareProfile>& software);

/// The step time of `run` on `hw` with `strategy` fixed (a RunCheck's own):
/// nothing chosen again. Throws ConfigError or SimulationError.
double simulate_fixed(const config::PublishedRun& run, const hardware::HardwareProfile& hw,
                      const config::StrategyInput& strategy);

/// Validates every run with the profiles `profiles` gives.
Report validate_runs(const config::PublishedRuns& runs, const ProfileSource& profiles,
                     const std::vector<config::SoftwareProfile>& software, const Progress& progress = {});

/// What was chosen for a run's open fields, "field=value field=value", or "-".
std::string chosen_text(const RunCheck& r);

/// The median of `v` (the mean of the middle two for an even count; 0 when empty).
double median(std::vector<double> v);

/// Median, mean and largest absolute error of the runs that have a prediction.
Summary summarize(const std::vector<RunCheck>& runs);

}  // namespace ptsim::validate

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

/// Validates every run; hardware profiles are read from `hw_dir`/<name>.json.
Report validate_runs(const config::PublishedRuns& runs, const std::string& hw_dir,
                     const std::vector<config::SoftwareProfile>& software, const Progress& progress = {});

/// Median, mean and largest absolute error of the runs that have a prediction.
Summary summarize(const std::vector<RunCheck>& runs);

}  // namespace ptsim::validate

// Published training runs (schema "ptsim-runs/1", ../shared/validation/README.md):
// a model, a hardware profile by name, a parallel strategy with the fields
// the source did not publish left null, and the measured step time.
#pragma once

#include <string>
#include <vector>

#include "ptsim/config/strategy_input.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/config/input_files.hpp"

namespace ptsim::config {

struct PublishedRun {
  std::string id;
  std::string source;
  std::string hardware;  // profile stem, e.g. "a100-sxm4-80gb"
  model::ModelSpec model;
  /// The published strategy; unpublished fields are unset and named in `unpublished`.
  StrategyInput strategy;
  std::vector<std::string> unpublished;  // StrategyInput field names
  double measured_step_time_s = 0;
  std::string derived_from;
};

struct PublishedRuns {
  std::string file;
  std::vector<PublishedRun> runs;
};

/// Reads a run file; throws ConfigError naming the file, the run and the key.
PublishedRuns load_runs(const std::string& path, InputFiles& inputs);

}  // namespace ptsim::config

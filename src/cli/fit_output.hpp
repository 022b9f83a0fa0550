// What `ptsim fit` prints and writes, for step times and nccl-tests logs
// alike: the parameters (start, fitted, standard error, what pins them), the
// refused ones and why, every point before and after, and the figures the
// fitted profile takes with their source text.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "ptsim/config/load_hardware.hpp"
#include "ptsim/fit/fit_collectives.hpp"
#include "ptsim/fit/fit_runs.hpp"

namespace ptsim::cli {

struct FitPointRow {
  std::string label;
  double measured_s = 0, before_s = 0, after_s = 0;
  std::string detail;  // chosen strategy fields, or busbw and algorithm
};

struct FitOutput {
  hardware::FitRecord record;
  hardware::HardwareProfile start, fitted;
  std::string what;  // "9 runs of validation/published_runs.json", "34 rows of 2 nccl-tests logs"
  std::vector<FitPointRow> rows;
  std::vector<std::string> notes;  // runs left out, rounds, evaluations
  std::vector<std::string> exclude_patterns;  // --exclude, named in each figure's source
  nlohmann::ordered_json rows_json = nlohmann::ordered_json::array();
};

FitOutput from_runs(const fit::RunFitResult& r, const hardware::HardwareProfile& start,
                    const std::vector<std::string>& excluded, const std::vector<std::string>& exclude_patterns);
FitOutput from_collectives(const fit::CollectiveFitResult& r, const hardware::HardwareProfile& start);

void print_fit(std::ostream& out, const FitOutput& f);

/// Each fitted parameter's figures, and the companions a profile without
/// sustained rates needs when a fit creates them.
std::vector<config::FittedFigure> fitted_figures(const FitOutput& f);

nlohmann::ordered_json fit_json(const FitOutput& f);

}  // namespace ptsim::cli

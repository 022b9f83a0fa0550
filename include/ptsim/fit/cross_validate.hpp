// Cross-validation of `ptsim fit`: runs predicted on profiles fitted to
// other runs — another file (`ptsim validate --fit-on`), or the same file
// with each run's own source left out of the fit that predicts it
// (leave-one-source-out). Accuracy is reported three ways (DESIGN.md):
// uncalibrated, fitted on another source, fitted in sample.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ptsim/fit/fit_runs.hpp"
#include "ptsim/validate/validate.hpp"

namespace ptsim::fit {

struct ProfileFit {
  std::string hardware;
  std::string left_out_source;  // with leave-one-source-out: the source whose runs this fit predicts
  std::size_t runs = 0;         // runs fitted on
  hardware::FitRecord record;   // empty parameters when nothing could be fitted
  std::string note;             // why there is no fit, when there is none
};

struct CrossValidation {
  validate::Report report;      // every run of the validated file, on its fitted profile
  std::vector<ProfileFit> fits;
};

struct CrossValidationOptions {
  RunFitOptions fit;
  std::vector<std::string> exclude;  // shell patterns of run ids left out of every fit
  bool leave_one_source_out = false;
};

CrossValidation cross_validate(const config::PublishedRuns& runs, const config::PublishedRuns& fit_on,
                               const validate::ProfileSource& profiles,
                               const std::vector<config::SoftwareProfile>& software,
                               const CrossValidationOptions& options, const FitProgress& progress = {});

}  // namespace ptsim::fit

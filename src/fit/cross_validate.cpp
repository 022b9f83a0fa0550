// Runs predicted on profiles fitted to other runs (see cross_validate.hpp).
#include "ptsim/fit/cross_validate.hpp"

#include <fmt/format.h>

#include <map>

#include "ptsim/common/error.hpp"

namespace ptsim::fit {

CrossValidation cross_validate(const config::PublishedRuns& runs, const config::PublishedRuns& fit_on,
                               const validate::ProfileSource& profiles,
                               const std::vector<config::SoftwareProfile>& software,
                               const CrossValidationOptions& options, const FitProgress& progress) {
  CrossValidation out;
  out.report.runs_file = runs.file;
  // One fit per (profile, left-out source), made the first time a run needs it.
  std::map<std::pair<std::string, std::string>, std::optional<hardware::HardwareProfile>> fitted;
  for (std::size_t i = 0; i < runs.runs.size(); ++i) {
    const auto& run = runs.runs[i];
    if (progress) progress(fmt::format("[{}/{}] {}", i + 1, runs.runs.size(), run.id));
    validate::RunCheck check;
    try {
      const std::string left_out = options.leave_one_source_out ? run.source : "";
      auto& slot = fitted[{run.hardware, left_out}];
      if (!slot) {
        const hardware::HardwareProfile start = profiles(run.hardware);
        config::PublishedRuns set{fit_on.file, {}};
        for (const auto& r : fit_on.runs)
          if (r.hardware == run.hardware && !id_matches(options.exclude, r.id) &&
              !(options.leave_one_source_out && r.source == run.source))
            set.runs.push_back(r);
        ProfileFit record{run.hardware, left_out, set.runs.size(), {}, ""};
        if (set.runs.empty()) {
          record.note = fmt::format("{} has no run on {}{}: uncalibrated", fit_on.file, run.hardware,
                                    options.leave_one_source_out ? " from another source" : "");
          slot = start;
        } else {
          RunFitOptions quiet_refusals = options.fit;
          quiet_refusals.strict = false;
          const RunFitResult r = fit_runs(set, start, software, quiet_refusals, progress);
          record.record = r.record;
          if (r.record.parameters.empty()) record.note = "nothing could be fitted: uncalibrated";
          slot = r.fitted;
        }
        out.fits.push_back(std::move(record));
      }
      check = validate::check_run(run, *slot, software);
    } catch (const ConfigError& e) {
      check.id = run.id;
      check.measured_s = run.measured_step_time_s;
      check.failure = e.what();
    }
    if (!check.predicted_s) ++out.report.failures;
    out.report.runs.push_back(std::move(check));
  }
  out.report.summary = validate::summarize(out.report.runs);
  return out;
}

}  // namespace ptsim::fit

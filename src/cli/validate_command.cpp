// `ptsim validate`: published runs → simulations → a table of predicted
// against measured step times, and a summary a CI job can bound.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "parse_args.hpp"
#include "shipped_files.hpp"
#include "output_file.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/load_runs.hpp"
#include "ptsim/config/load_software.hpp"
#include "ptsim/fit/cross_validate.hpp"
#include "ptsim/validate/validate.hpp"

namespace ptsim::cli {

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage = R"(Usage: ptsim validate --runs FILE [--hw-dir DIR] [--software FILE] [--json FILE] [--max-median-error PCT]
                      [--fit-on FILE [--leave-one-source-out] [--fit-params LIST] [--fit-exclude GLOB]...]

Simulates every published run in FILE (schema ptsim-runs/1, docs/formats.md)
and prints measured against predicted step time, the error, the values ptsim
had to choose for fields the source left null (the fastest that fits in
memory), and the largest part of the step. The software each source ran
(attention kernels, overlap settings) comes from --software, with its
evidence. The defaults of --hw-dir and --software are the profiles and the
software file shipped with this ptsim, found from any working directory.
Exits with 4 when the median absolute error exceeds --max-median-error, and
with 3 when a run cannot be simulated.

With --fit-on, each profile is first fitted (as ptsim fit --runs does) to
the runs of that file on it, and FILE's runs are predicted on the fitted
profiles; with --leave-one-source-out each run's own source (its "source"
text) is left out of the fit that predicts it. Three ways to read accuracy:
without --fit-on (uncalibrated), --fit-on another file or the same one with
--leave-one-source-out (fitted on another source), --fit-on the same file
(in sample).

Examples:
  ptsim validate --runs validation/published_runs.json --max-median-error 14
  ptsim validate --runs validation/heldout_runs.json --fit-on validation/published_runs.json \
      --fit-exclude 'narayanan21-t2-zero3-*'
  ptsim validate --runs validation/published_runs.json --fit-on validation/published_runs.json \
      --leave-one-source-out

)";

}  // namespace

int run_validate(const std::vector<std::string>& args, std::ostream& out) {
  std::string runs_path, hw_dir = shipped_file("hw_profiles"), software_path = shipped_file("validation/software.json"),
                                 json, fit_on, fit_params;
  std::vector<std::string> fit_exclude;
  double bound = -1;
  po::options_description options("Options");
  options.add_options()
      ("runs", po::value(&runs_path)->value_name("FILE"), "published runs (ptsim-runs/1)")
      ("hw-dir", po::value(&hw_dir)->value_name("DIR"), "where hardware profiles are found by name (default: the shipped hw_profiles)")
      ("software", po::value(&software_path)->value_name("FILE"),
       "what each source's framework ran (default: the shipped validation/software.json)")
      ("json", po::value(&json)->value_name("FILE"), "write the table and summary as JSON")
      ("max-median-error", po::value(&bound)->value_name("PCT"), "fail (exit 4) above this median |error| %")
      ("fit-on", po::value(&fit_on)->value_name("FILE"), "fit each profile to this file's runs on it first")
      ("leave-one-source-out", "with --fit-on: leave each run's own source out of the fit that predicts it")
      ("fit-params", po::value(&fit_params)->value_name("LIST"),
       "with --fit-on: the parameters to fit (default: every one the runs identify; see ptsim fit --help)")
      ("fit-exclude", po::value(&fit_exclude)->value_name("GLOB"),
       "with --fit-on: leave runs whose id matches out of every fit (shell pattern; repeatable)")
      ("quiet,q", "no progress on standard error")
      ("help,h", "show this help");
  po::variables_map vm;
  parse_args(args, options, nullptr, vm, "validate");
  if (vm.count("help")) {
    std::ostringstream text;
    text << options;
    fmt::print(out, "{}{}", kUsage, text.str());
    return 0;
  }
  if (runs_path.empty()) throw ConfigError("ptsim validate: --runs FILE is required; see --help");
  const bool fitting = !fit_on.empty();
  if (!fitting && (vm.count("leave-one-source-out") || !fit_params.empty() || !fit_exclude.empty()))
    throw ConfigError("ptsim validate: --leave-one-source-out, --fit-params and --fit-exclude go with --fit-on FILE");
  if (!std::filesystem::is_directory(hw_dir))
    throw ConfigError(fmt::format("ptsim validate: --hw-dir {} is not a directory", hw_dir));
  config::InputFiles read;
  for (const std::string& path : {runs_path, software_path, fit_on}) read.record(path);
  check_output_paths({{"--json", json}}, read);
  const config::PublishedRuns runs = config::load_runs(runs_path, read);
  const auto software = config::load_software(software_path, read);
  const bool quiet = vm.count("quiet") > 0;
  std::vector<fit::ProfileFit> fits;
  validate::Report report;
  if (fitting) {
    fit::CrossValidationOptions cv;
    for (const auto& item : comma_list(fit_params)) cv.fit.parameters.push_back(fit::parameter(item).name);
    cv.exclude = fit_exclude;
    cv.leave_one_source_out = vm.count("leave-one-source-out") > 0;
    fit::CrossValidation result =
        fit::cross_validate(runs, config::load_runs(fit_on, read), validate::profiles_in(hw_dir, read), software, cv,
                            [&](const std::string& line) {
                              if (!quiet) fmt::print(stderr, "{}\n", line);
                            });
    report = std::move(result.report);
    fits = std::move(result.fits);
    for (const auto& f : fits) {
      std::string values;
      for (const auto& p : f.record.parameters)
        values += fmt::format("{}{} = {:.4g}{}", values.empty() ? "" : ", ", p.name, p.value,
                              p.standard_error ? fmt::format(" ± {:.2g}", *p.standard_error) : "");
      const std::string scope = f.left_out_source.empty() ? ""
                                                          : fmt::format(" (leaving out {})", f.left_out_source);
      fmt::print(out, "fitted {} on {} run(s) of {}{}: {}\n", f.hardware, f.runs, fit_on, scope,
                 f.note.empty() ? fmt::format("{} (median |error| {:.1f}% → {:.1f}% on those runs)", values,
                                              f.record.median_abs_error_before_pct,
                                              f.record.median_abs_error_after_pct)
                                : f.note);
    }
  } else {
    report = validate::validate_runs(runs, validate::profiles_in(hw_dir, read), software,
                                     [&](std::size_t i, std::size_t n, const std::string& id) {
                                       if (!quiet) fmt::print(stderr, "[{}/{}] {}\n", i + 1, n, id);
                                     });
  }

  fmt::print(out, "{:<38} {:>10} {:>10} {:>8}  {:<26} {}\n", "run", "measured", "predicted", "error", "largest part",
             "chosen");
  for (const auto& r : report.runs) {
    if (!r.predicted_s) {
      fmt::print(out, "{:<38} {:>9.3f}s {:>10} {:>8}  cannot simulate: {}\n", r.id, r.measured_s, "-", "-", r.failure);
      continue;
    }
    fmt::print(out, "{:<38} {:>9.3f}s {:>9.3f}s {:>+7.1f}%  {:<26} {}{}\n", r.id, r.measured_s, *r.predicted_s,
               r.error_pct, r.dominant, validate::chosen_text(r), r.fits ? "" : "  (DOES NOT FIT in memory)");
  }
  const auto& s = report.summary;
  fmt::print(out, "summary: {} runs, median |error| {:.1f}%, mean {:.1f}%, max {:.1f}%{}\n", s.count,
             s.median_abs_error_pct, s.mean_abs_error_pct, s.max_abs_error_pct,
             report.failures ? fmt::format(" ({} could not be simulated)", report.failures) : "");

  if (!json.empty()) {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["runs_file"] = runs_path;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& r : report.runs) {
      nlohmann::ordered_json row;
      row["id"] = r.id;
      row["measured_step_time_s"] = r.measured_s;
      if (r.predicted_s) {
        row["predicted_step_time_s"] = *r.predicted_s;
        row["error_pct"] = r.error_pct;
        row["dominant"] = r.dominant;
        row["fits"] = r.fits;
      } else {
        row["predicted_step_time_s"] = nullptr;
        row["error_pct"] = nullptr;
        row["failure"] = r.failure;
      }
      row["chosen"] = r.chosen;
      row["assumed"] = r.assumed;
      row["simulated_candidates"] = r.simulated;
      rows.push_back(row);
    }
    j["runs"] = rows;
    if (fitting) {
      nlohmann::ordered_json fitted = nlohmann::ordered_json::array();
      for (const auto& f : fits) {
        nlohmann::ordered_json params = nlohmann::ordered_json::array();
        for (const auto& p : f.record.parameters)
          params.push_back({{"name", p.name},
                            {"value", p.value},
                            {"standard_error", p.standard_error ? nlohmann::ordered_json(*p.standard_error)
                                                                : nlohmann::ordered_json()}});
        fitted.push_back({{"hardware", f.hardware},
                          {"left_out_source", f.left_out_source},
                          {"runs", f.runs},
                          {"parameters", params},
                          {"note", f.note}});
      }
      j["fit_on"] = fit_on;
      j["fits"] = fitted;
    }
    j["summary"] = {{"count", s.count},
                    {"median_abs_error_pct", s.median_abs_error_pct},
                    {"mean_abs_error_pct", s.mean_abs_error_pct},
                    {"max_abs_error_pct", s.max_abs_error_pct},
                    {"failures", report.failures}};
    write_output_file(json, read, [&](std::ostream& o) { o << j.dump(2) << '\n'; });
  }
  if (report.failures > 0) {
    fmt::print(stderr, "ptsim validate: {} run(s) could not be simulated (see the table)\n", report.failures);
    return 3;
  }
  if (bound >= 0 && s.median_abs_error_pct > bound) {
    fmt::print(stderr, "ptsim validate: median |error| {:.1f}% exceeds --max-median-error {}\n", s.median_abs_error_pct,
               bound);
    return 4;
  }
  return 0;
}

}  // namespace ptsim::cli

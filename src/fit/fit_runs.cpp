// Fitting a profile to measured step times (see fit_runs.hpp).
#include "ptsim/fit/fit_runs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fnmatch.h>
#include <map>

#include "internal/fit_core.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/validate/validate.hpp"

namespace ptsim::fit {

namespace {

// What a run exercises, from its resolved strategy.
std::vector<Reach> reach_of(const config::StrategyInput& s, const hardware::HardwareProfile& hw) {
  std::vector<Reach> out = {Reach::Kernels};
  if (s.precision.value_or("bf16") == "fp8") out.push_back(Reach::Fp8Gemms);
  const std::int64_t gpus = s.gpus.value_or(1);
  if (gpus > 1) out.push_back(Reach::NvlinkTier);
  if (gpus > 1 && hw.nvlink.nvls_efficiency) out.push_back(Reach::NvlsTier);  // NCCL may pick NVLS inside a node
  if (gpus > hw.nvlink.domain_gpus) out.push_back(Reach::NetworkTier);
  return out;
}

}  // namespace

bool id_matches(const std::vector<std::string>& patterns, const std::string& id) {
  for (const auto& p : patterns)
    if (fnmatch(p.c_str(), id.c_str(), 0) == 0) return true;
  return false;
}

RunFitResult fit_runs(const config::PublishedRuns& runs, const hardware::HardwareProfile& profile,
                      const std::vector<config::SoftwareProfile>& software, const RunFitOptions& options,
                      const FitProgress& progress) {
  const auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  RunFitResult out;
  std::vector<const config::PublishedRun*> used;
  std::vector<std::string> other_profiles;
  for (const auto& run : runs.runs) {
    if (run.hardware == profile.name) {
      used.push_back(&run);
      continue;
    }
    out.left_out.push_back(fmt::format("{}: on {}, not {}", run.id, run.hardware, profile.name));
    if (std::find(other_profiles.begin(), other_profiles.end(), run.hardware) == other_profiles.end())
      other_profiles.push_back(run.hardware);
  }
  if (used.empty())
    throw ConfigError(fmt::format("{}: no run is on the profile {} (the runs name {}); give --hw the profile "
                                  "the runs were measured on",
                                  runs.file, profile.name, fmt::join(other_profiles, ", ")));

  // Each run's open fields are chosen on the starting profile, then again
  // on each fitted one, until the choices hold (or max_rounds fits).
  std::vector<const config::PublishedRun*> simulated;
  bool first = true;  // a run that cannot be simulated is reported once
  const auto choose = [&](const hardware::HardwareProfile& hw) {
    std::vector<validate::RunCheck> checks;
    simulated.clear();
    for (const auto* run : used) {
      validate::RunCheck c = validate::check_run(*run, hw, software);
      if (!c.predicted_s) {
        if (first) out.left_out.push_back(fmt::format("{}: cannot be simulated: {}", run->id, c.failure));
        continue;
      }
      simulated.push_back(run);
      checks.push_back(std::move(c));
    }
    if (checks.empty())
      throw ConfigError(fmt::format("{}: none of the runs on {} could be simulated", runs.file, profile.name));
    first = false;
    return checks;
  };
  say(fmt::format("fit: choosing what {} run(s) left open, on {}", used.size(), profile.name));
  std::vector<validate::RunCheck> checks = choose(profile);
  std::map<std::string, double> before_s;
  for (const auto& c : checks) before_s[c.id] = *c.predicted_s;
  internal::CoreResult core;
  for (out.rounds = 1; out.rounds <= options.max_rounds; ++out.rounds) {
    internal::Measurements m;
    for (const auto& c : checks) {
      m.labels.push_back(c.id);
      for (const Reach r : reach_of(c.strategy, profile))
        if (std::find(m.reached.begin(), m.reached.end(), r) == m.reached.end()) m.reached.push_back(r);
    }
    const std::vector<const config::PublishedRun*> fixed = simulated;
    m.log_errors = [&](const hardware::HardwareProfile& hw) {
      Vector e;
      for (std::size_t i = 0; i < checks.size(); ++i)
        e.push_back(std::log(validate::simulate_fixed(*fixed[i], hw, checks[i].strategy) /
                             fixed[i]->measured_step_time_s));
      ++out.evaluations;
      return e;
    };
    // Every round fits from the starting profile's values: a round changes
    // only what was chosen for the runs.
    core = internal::fit_parameters(profile, m, options.parameters, options.strict,
                                    {options.min_sensitivity, options.min_independence}, progress);
    say(fmt::format("fit: round {}: choosing again on the fitted profile", out.rounds));
    std::vector<validate::RunCheck> again = choose(core.fitted);
    const bool same = again.size() == checks.size() &&
                      std::equal(again.begin(), again.end(), checks.begin(),
                                 [](const auto& a, const auto& b) { return a.id == b.id && a.chosen == b.chosen; });
    checks = std::move(again);
    if (same || core.parameters.empty()) break;
  }
  out.rounds = std::min(out.rounds, options.max_rounds);
  out.fitted = core.fitted;

  auto& rec = out.record;
  rec.method = "step times";
  rec.inputs = {runs.file};
  rec.parameters = core.parameters;
  rec.refused = core.refused;
  Vector before, after;
  for (const auto& c : checks) {
    rec.points.push_back(c.id);
    const auto b = before_s.find(c.id);
    const double was = b != before_s.end() ? b->second : *c.predicted_s;
    out.rows.push_back({c.id, c.measured_s, was, *c.predicted_s, validate::chosen_text(c)});
    before.push_back(std::log(was / c.measured_s));
    after.push_back(std::log(*c.predicted_s / c.measured_s));
  }
  internal::record_errors(rec, before, after);
  return out;
}

}  // namespace ptsim::fit

// Published runs through the simulator (see validate.hpp).
#include "ptsim/validate/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <variant>

#include "ptsim/common/error.hpp"
#include "ptsim/config/load_hardware.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "ptsim/plan/search.hpp"
#include "ptsim/simulate/simulate_step.hpp"
#include "ptsim/strategy/schedule.hpp"

namespace ptsim::validate {

namespace {

// Applies the software profile's settings the run did not publish, and
// drops those that cannot apply to it (sequence parallelism and TP overlap
// without TP). Returns what was applied, as text.
std::map<std::string, std::string> apply_software(const config::SoftwareProfile& sw, config::StrategyInput& s,
                                                  std::vector<std::string>& unpublished) {
  std::map<std::string, std::string> applied;
  const bool tp = s.tp.value_or(1) > 1;
  for (const auto& f : config::strategy_fields()) {
    std::visit(
        [&](auto member) {
          const auto& value = sw.settings.*member;
          if (!value || s.*member) return;  // not set by the profile, or published
          const std::string field = f.field;
          if ((field == "sequence_parallel" || field == "tp_comm_overlap") && !tp) return;
          s.*member = value;
          s.origin[field] = fmt::format("validation/software.json ({})", sw.runs);
          applied[field] = fmt::format("{}", *value);
          unpublished.erase(std::remove(unpublished.begin(), unpublished.end(), field), unpublished.end());
        },
        f.member);
  }
  return applied;
}

// The largest part of the critical rank's step.
std::string dominant_part(const report::StepResult& r) {
  const auto& b = r.breakdown;
  std::vector<std::pair<double, std::string>> parts = {{b.compute_s, "compute"},
                                                       {b.pipeline_bubble_s, "pipeline bubble"},
                                                       {b.host_issue_s, "host issue"},
                                                       {b.optimizer_s, "optimizer"}};
  for (const auto& [dim, d] : r.communication)
    if (d.exposed_s > 0) {
      std::string upper = dim;
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      parts.push_back({d.exposed_s, "exposed " + upper});
    }
  const auto top = std::max_element(parts.begin(), parts.end());
  return fmt::format("{} {:.0f}%", top->second, r.step_time_s > 0 ? 100 * top->first / r.step_time_s : 0.0);
}

}  // namespace

ProfileSource profiles_in(const std::string& hw_dir, config::InputFiles& read) {
  return [hw_dir, &read](const std::string& name) {
    const std::string path = (std::filesystem::path(hw_dir) / (name + ".json")).string();
    if (!std::filesystem::exists(path))
      throw ConfigError(fmt::format("hardware profile '{}' not found as {}", name, path));
    return config::load_hardware(path, read);
  };
}

RunCheck check_run(const config::PublishedRun& run, const hardware::HardwareProfile& hw,
                   const std::vector<config::SoftwareProfile>& software) {
  RunCheck c;
  c.id = run.id;
  c.measured_s = run.measured_step_time_s;
  try {
    config::StrategyInput strategy = run.strategy;
    std::vector<std::string> open = run.unpublished;
    if (const auto* sw = config::software_for(software, run.id)) c.assumed = apply_software(*sw, strategy, open);
    // Fields the run leaves open that do not apply to it need no choice.
    std::vector<std::string> free;
    for (const auto& f : open) {
      if (f == "cp" && !strategy.cp) strategy.cp = 1;
      if (f == "ep" && !strategy.ep) strategy.ep = 1;
      if (f == "cp" || f == "ep") continue;
      if (f == "sequence_parallel" && strategy.tp.value_or(1) == 1) continue;
      if (f == "zero" && strategy.distributed_optimizer.value_or(false)) continue;  // ZeRO-1 by the software
      // vpp is open only where a pipeline or a schedule that interleaves can use it.
      const strategy::ScheduleDescriptor* named =
          strategy.schedule ? strategy::find_schedule(*strategy.schedule) : nullptr;
      if (f == "vpp" && strategy.pp.value_or(1) == 1 && !(named != nullptr && named->chunks_from_vpp)) continue;
      free.push_back(f);
    }
    const auto candidates = plan::candidates(run.model, strategy, free);
    const plan::SearchResult search = plan::fastest_fitting(run.model, hw, candidates);
    c.simulated = search.simulated;
    if (!search.best) {
      c.failure = search.first_refusal.empty() ? "no candidate strategy could be simulated"
                                               : "every candidate was refused; the first: " + search.first_refusal;
      return c;
    }
    c.chosen = search.best->candidate.chosen;
    c.strategy = search.best->candidate.strategy;
    c.fits = search.fits;
    c.result = search.best->result;
    c.predicted_s = c.result.step_time_s;
    c.error_pct = (*c.predicted_s - c.measured_s) / c.measured_s * 100;
    c.dominant = dominant_part(c.result);
  } catch (const ConfigError& e) {
    c.failure = e.what();
  } catch (const SimulationError& e) {
    c.failure = std::string("simulation failed: ") + e.what();
  }
  return c;
}

double simulate_fixed(const config::PublishedRun& run, const hardware::HardwareProfile& hw,
                      const config::StrategyInput& strategy) {
  const config::ResolvedRun resolved = config::resolve_run(run.model, strategy);
  const simulate::Request request{resolved.model, hw, resolved.parallel, simulate::Mode::Auto, {}, {}};
  return simulate::simulate_step(request).result.step_time_s;
}

std::string chosen_text(const RunCheck& r) {
  std::string out;
  for (const auto& [field, value] : r.chosen) out += fmt::format("{}{}={}", out.empty() ? "" : " ", field, value);
  return out.empty() ? "-" : out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Summary summarize(const std::vector<RunCheck>& runs) {
  std::vector<double> errors;
  for (const auto& r : runs)
    if (r.predicted_s) errors.push_back(std::abs(r.error_pct));
  Summary s;
  s.count = errors.size();
  if (errors.empty()) return s;
  s.median_abs_error_pct = median(errors);
  s.mean_abs_error_pct = std::accumulate(errors.begin(), errors.end(), 0.0) / static_cast<double>(errors.size());
  s.max_abs_error_pct = *std::max_element(errors.begin(), errors.end());
  return s;
}

Report validate_runs(const config::PublishedRuns& runs, const ProfileSource& profiles,
                     const std::vector<config::SoftwareProfile>& software, const Progress& progress) {
  Report r;
  r.runs_file = runs.file;
  for (std::size_t i = 0; i < runs.runs.size(); ++i) {
    const auto& run = runs.runs[i];
    if (progress) progress(i, runs.runs.size(), run.id);
    try {
      r.runs.push_back(check_run(run, profiles(run.hardware), software));
    } catch (const ConfigError& e) {  // the profile: missing or invalid
      RunCheck c;
      c.id = run.id;
      c.measured_s = run.measured_step_time_s;
      c.failure = e.what();
      r.runs.push_back(std::move(c));
    }
    if (!r.runs.back().predicted_s) ++r.failures;
  }
  r.summary = summarize(r.runs);
  return r;
}

}  // namespace ptsim::validate

// `ptsim fit`'s table, JSON and fitted figures (see fit_output.hpp).
#include "fit_output.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>

namespace ptsim::cli {

namespace {

double pct(double predicted, double measured) { return (predicted - measured) / measured * 100; }

std::string value_text(const fit::Parameter& p, double v) {
  return p.unit == "us" ? fmt::format("{:.3f} µs", v) : fmt::format("{:.4f}", v);
}

// A fitted figure as the profile keeps it: four significant digits, as many
// as a standard error of a few percent leaves meaningful.
double rounded(double v) { return std::stod(fmt::format("{:.4g}", v)); }

// The source a fitted figure names.
std::string fit_source(const FitOutput& f, const hardware::FittedParameter& p) {
  const auto& rec = f.record;
  const std::string uncertainty =
      p.standard_error ? fmt::format(" ± {:.2g} (standard error)", *p.standard_error) : " (no standard error)";
  const std::string excluded =
      f.exclude_patterns.empty() ? ""
                                 : fmt::format(" (leaving out the runs matching {})", fmt::join(f.exclude_patterns, ", "));
  return fmt::format("{:.4g}{}: ptsim fit on {}{} — least squares on log(predicted / measured), {} {}; pinned by {}{}; "
                     "median |error| {:.1f}% → {:.1f}%, max {:.1f}% → {:.1f}%",
                     rounded(p.value), uncertainty, fmt::join(rec.inputs, ", "), excluded, rec.points.size(),
                     rec.method == "step times" ? "runs" : "log rows", fmt::join(p.pinned_by, ", "),
                     p.at_bound ? "; at its bound" : "", rec.median_abs_error_before_pct,
                     rec.median_abs_error_after_pct, rec.max_abs_error_before_pct, rec.max_abs_error_after_pct);
}

}  // namespace

FitOutput from_runs(const fit::RunFitResult& r, const hardware::HardwareProfile& start,
                    const std::vector<std::string>& excluded, const std::vector<std::string>& exclude_patterns) {
  FitOutput f;
  if (!excluded.empty()) f.exclude_patterns = exclude_patterns;
  f.record = r.record;
  f.start = start;
  f.fitted = r.fitted;
  f.what = fmt::format("{} run(s) of {}", r.rows.size(), r.record.inputs.front());
  for (const auto& row : r.rows) {
    f.rows.push_back({row.id, row.measured_s, row.before_s, row.after_s, row.chosen});
    f.rows_json.push_back({{"id", row.id},
                           {"measured_step_time_s", row.measured_s},
                           {"before_step_time_s", row.before_s},
                           {"after_step_time_s", row.after_s},
                           {"before_error_pct", pct(row.before_s, row.measured_s)},
                           {"after_error_pct", pct(row.after_s, row.measured_s)},
                           {"chosen", row.chosen}});
  }
  if (!excluded.empty()) f.notes.push_back(fmt::format("left out by --exclude: {}", fmt::join(excluded, ", ")));
  for (const auto& l : r.left_out) f.notes.push_back("left out: " + l);
  f.notes.push_back(fmt::format("{} round(s) of choosing what the runs left open; {} simulations of the run set",
                                r.rounds, r.evaluations));
  return f;
}

FitOutput from_collectives(const fit::CollectiveFitResult& r, const hardware::HardwareProfile& start) {
  FitOutput f;
  f.record = r.record;
  f.start = start;
  f.fitted = r.fitted;
  f.what = fmt::format("{} row(s) of {} nccl-tests log(s)", r.rows.size(), r.record.inputs.size());
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const auto& row = r.rows[i];
    f.rows.push_back({r.record.points[i], row.measured_s, row.before_s, row.after_s,
                      fmt::format("busbw {:.1f} GB/s measured, {:.1f} → {:.1f} predicted ({} → {})",
                                  row.measured_busbw_GBps, row.before_busbw_GBps, row.after_busbw_GBps,
                                  row.algorithm_before, row.algorithm_after)});
    f.rows_json.push_back({{"point", r.record.points[i]},
                           {"log", row.log},
                           {"op", row.op},
                           {"ranks", row.ranks},
                           {"bytes", row.bytes},
                           {"measured_time_s", row.measured_s},
                           {"before_time_s", row.before_s},
                           {"after_time_s", row.after_s},
                           {"measured_busbw_GBps", row.measured_busbw_GBps},
                           {"before_busbw_GBps", row.before_busbw_GBps},
                           {"after_busbw_GBps", row.after_busbw_GBps},
                           {"algorithm_before", row.algorithm_before},
                           {"algorithm_after", row.algorithm_after}});
  }
  f.notes.push_back(fmt::format("{} evaluations of every row", r.evaluations));
  return f;
}

void print_fit(std::ostream& out, const FitOutput& f) {
  const auto& rec = f.record;
  fmt::print(out, "ptsim fit: {} on {}\n", f.start.name, f.what);
  if (rec.parameters.empty()) {
    fmt::print(out, "nothing could be fitted: no parameter is identified by these measurements\n");
  } else {
    fmt::print(out, "{:<24} {:>12} {:>12} {:>12}  {}\n", "parameter", "start", "fitted", "std. error", "pinned by");
    for (const auto& p : rec.parameters) {
      const auto& def = fit::parameter(p.name);
      fmt::print(out, "{:<24} {:>12} {:>12} {:>12}  {}{}\n", p.name, value_text(def, def.get(f.start)),
                 value_text(def, p.value), p.standard_error ? value_text(def, *p.standard_error) : "-",
                 fmt::join(p.pinned_by, ", "), p.at_bound ? "  (at its bound)" : "");
    }
  }
  for (const auto& r : rec.refused) fmt::print(out, "not fitted: {}: {}\n", r.name, r.why);
  std::size_t width = 10;
  for (const auto& row : f.rows) width = std::max(width, row.label.size());
  fmt::print(out, "{:<{}} {:>11} {:>9} {:>9}  {}\n", "point", width, "measured", "before", "after", "");
  for (const auto& row : f.rows)
    fmt::print(out, "{:<{}} {:>10.4g}s {:>+8.1f}% {:>+8.1f}%  {}\n", row.label, width, row.measured_s,
               pct(row.before_s, row.measured_s), pct(row.after_s, row.measured_s), row.detail);
  fmt::print(out, "median |error| {:.1f}% → {:.1f}%, max {:.1f}% → {:.1f}%\n", rec.median_abs_error_before_pct,
             rec.median_abs_error_after_pct, rec.max_abs_error_before_pct, rec.max_abs_error_after_pct);
  for (const auto& n : f.notes) fmt::print(out, "{}\n", n);
}

std::vector<config::FittedFigure> fitted_figures(const FitOutput& f) {
  std::vector<config::FittedFigure> out;
  std::vector<std::string> written;
  for (const auto& p : f.record.parameters) {
    const auto& def = fit::parameter(p.name);
    for (const auto& pointer : def.pointers) {
      // fp16's pointer only where the GPU has fp16.
      if (pointer.ends_with("/fp16") && !f.fitted.gpu.peak_flops_per_s[static_cast<std::size_t>(Dtype::Fp16)])
        continue;
      out.push_back({pointer, rounded(p.value), fit_source(f, p)});
      written.push_back(def.name);
    }
  }
  // A sustained block the fit creates needs its bf16 and memory fractions.
  if (!f.start.gpu.sustained)
    for (const auto& p : f.record.parameters)
      for (const auto& name : fit::companions(fit::parameter(p.name))) {
        if (std::find(written.begin(), written.end(), name) != written.end()) continue;
        const auto& def = fit::parameter(name);
        out.push_back({def.pointers.front(), def.get(f.fitted),
                       fmt::format("{}: not fitted (the burst rate kept); ptsim fit created /gpu/sustained for {}",
                                   def.get(f.fitted), p.name)});
        written.push_back(name);
      }
  return out;
}

nlohmann::ordered_json fit_json(const FitOutput& f) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["hardware"] = f.start.name;
  j["method"] = f.record.method;
  j["inputs"] = f.record.inputs;
  nlohmann::ordered_json params = nlohmann::ordered_json::array();
  for (const auto& p : f.record.parameters) {
    const auto& def = fit::parameter(p.name);
    nlohmann::ordered_json o;
    o["name"] = p.name;
    o["unit"] = def.unit;
    o["start"] = def.get(f.start);
    o["value"] = p.value;
    o["standard_error"] = p.standard_error ? nlohmann::ordered_json(*p.standard_error) : nlohmann::ordered_json();
    o["pinned_by"] = p.pinned_by;
    o["at_bound"] = p.at_bound;
    params.push_back(o);
  }
  j["parameters"] = params;
  nlohmann::ordered_json refused = nlohmann::ordered_json::array();
  for (const auto& r : f.record.refused) refused.push_back({{"name", r.name}, {"why", r.why}});
  j["refused"] = refused;
  j["points"] = f.rows_json;
  j["summary"] = {{"median_abs_error_before_pct", f.record.median_abs_error_before_pct},
                  {"max_abs_error_before_pct", f.record.max_abs_error_before_pct},
                  {"median_abs_error_after_pct", f.record.median_abs_error_after_pct},
                  {"max_abs_error_after_pct", f.record.max_abs_error_after_pct}};
  j["notes"] = f.notes;
  return j;
}

}  // namespace ptsim::cli

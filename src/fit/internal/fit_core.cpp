// Identifying and fitting declared parameters (see fit_core.hpp).
//
// Coordinates: a fraction or efficiency θ is fitted as x = log θ, a latency
// ℓ (µs, possibly 0) as x = log(1 + ℓ), so that the Jacobian of log errors
// is a sensitivity: ∂ log t / ∂ log θ = −0.84 means a 1% higher θ shortens
// the step by 0.84%. A parameter is refused when
//   - the measurements do not exercise it (fp8 without fp8 runs, a NIC
//     figure from single-node runs),
//   - no point's sensitivity reaches min_sensitivity, or
//   - its sensitivities, with those of the parameters kept before it (most
//     sensitive first) projected out, keep less than min_independence of
//     their length: the points move the same way under both, or
//   - once fitted, the standard error of its x exceeds max_log_error (for a
//     fraction, about its relative standard error): the points do not pin it
//     down; the least pinned one is dropped and the rest fitted again.
// Standard errors are s·√((JᵀJ)⁻¹)ⱼⱼ at the solution, s² = |r|²/(n − p):
// they assume the model's remaining error is independent noise across
// points, which it is not quite (what a single parameter cannot follow is
// systematic), so they are a lower bound on the real uncertainty.
#include "internal/fit_core.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ptsim/common/error.hpp"
#include "ptsim/validate/validate.hpp"

namespace ptsim::fit::internal {

namespace {

bool is_latency(const Parameter& p) { return p.unit == "us"; }
double to_x(const Parameter& p, double v) { return is_latency(p) ? std::log1p(v) : std::log(v); }
double from_x(const Parameter& p, double x) { return is_latency(p) ? std::expm1(x) : std::exp(x); }
// d value / d x at x, the factor from a standard error in x to one in the
// value: eˣ under both transforms.
double value_per_x(double x) { return std::exp(x); }

struct Column {
  const Parameter* p;
  Vector j;  // sensitivities of every point
  double norm = 0;
};

double dot(const Vector& a, const Vector& b) { return std::inner_product(a.begin(), a.end(), b.begin(), 0.0); }

std::string percent(double v) { return fmt::format("{:.2g}%", 100 * v); }

// Standard errors of x for the linearised problem r(x₀ + δ) ≈ r + J·δ at its
// least-squares δ: s·√((JᵀJ)⁻¹)ⱼⱼ with s² the linearised |r|² over n − p;
// infinite where JᵀJ is singular. At a fitted solution δ ≈ 0 and these are
// the fit's own standard errors.
Vector linearised_standard_errors(const Matrix& j, const Vector& r) {
  const std::size_t n = r.size(), p = j.empty() ? 0 : j.front().size();
  Vector se(p, HUGE_VAL);
  const auto inv = inverse(normal_matrix(j));
  if (!inv || n <= p) return se;
  const Vector g = gradient(j, r);
  Vector delta(p, 0.0);
  for (std::size_t u = 0; u < p; ++u)
    for (std::size_t v = 0; v < p; ++v) delta[u] -= (*inv)[u][v] * g[v];
  double rss = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double ri = r[i];
    for (std::size_t u = 0; u < p; ++u) ri += j[i][u] * delta[u];
    rss += ri * ri;
  }
  const double s2 = rss / static_cast<double>(n - p);
  for (std::size_t u = 0; u < p; ++u) se[u] = std::sqrt(std::max(0.0, s2 * (*inv)[u][u]));
  return se;
}

// The columns of `kept` as a Jacobian (n rows, one column each).
Matrix jacobian_of(const std::vector<Column>& kept, std::size_t n) {
  Matrix j(n, Vector(kept.size(), 0.0));
  for (std::size_t u = 0; u < kept.size(); ++u)
    for (std::size_t i = 0; i < n; ++i) j[i][u] = kept[u].j[i];
  return j;
}

}  // namespace

void record_errors(hardware::FitRecord& record, const Vector& before, const Vector& after) {
  // |exp(e) − 1| · 100: a log error as an absolute error in percent.
  const auto pct = [](const Vector& log_errors) {
    std::vector<double> out;
    for (const double e : log_errors) out.push_back(std::abs(std::expm1(e)) * 100);
    return out;
  };
  const auto largest = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
  const auto b = pct(before), a = pct(after);
  record.median_abs_error_before_pct = validate::median(b);
  record.max_abs_error_before_pct = largest(b);
  record.median_abs_error_after_pct = validate::median(a);
  record.max_abs_error_after_pct = largest(a);
}

CoreResult fit_parameters(const hardware::HardwareProfile& start, const Measurements& m,
                          const std::vector<std::string>& requested, bool strict, const Thresholds& thresholds,
                          const std::function<void(const std::string&)>& progress) {
  const auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  CoreResult out;
  out.fitted = start;
  std::vector<const Parameter*> candidates;
  if (requested.empty())
    for (const auto& p : parameters()) candidates.push_back(&p);
  else
    for (const auto& name : requested) candidates.push_back(&parameter(name));
  const bool named = !requested.empty() && strict;
  const auto refuse = [&](const Parameter& p, const std::string& why) {
    if (named) throw ConfigError(fmt::format("ptsim fit: cannot fit {}: {}", p.name, why));
    out.refused.push_back({p.name, why});
  };

  // 1. What the measurements do not exercise.
  std::vector<const Parameter*> reachable;
  for (const Parameter* p : candidates) {
    const std::string why = unreachable(*p, m.reached);
    if (!why.empty())
      refuse(*p, why);
    else if (p->reach == Reach::NvlsTier && !start.nvlink.nvls_efficiency)
      refuse(*p, "the profile has no NVLink SHARP (network.nvlink.nvls_efficiency): NCCL cannot run NVLS on it");
    else
      reachable.push_back(p);
  }

  // 2. Sensitivities at the start.
  out.before = m.log_errors(start);
  ++out.evaluations;
  const std::size_t n = out.before.size();
  constexpr double kProbe = 0.02;  // a 2% change (in log) of each parameter
  std::vector<Column> columns;
  for (const Parameter* p : reachable) {
    hardware::HardwareProfile moved = start;
    const double x = to_x(*p, p->get(start));
    const double up = to_x(*p, p->upper);
    const double h = x + kProbe <= up ? kProbe : -kProbe;
    p->set(moved, from_x(*p, x + h));
    const Vector e = m.log_errors(moved);
    ++out.evaluations;
    Column c{p, Vector(n, 0.0)};
    for (std::size_t i = 0; i < n; ++i) c.j[i] = (e[i] - out.before[i]) / h;
    c.norm = std::sqrt(dot(c.j, c.j));
    std::size_t top = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (std::abs(c.j[i]) > std::abs(c.j[top])) top = i;
    if (n == 0 || std::abs(c.j[top]) < thresholds.min_sensitivity)
      refuse(*p, n == 0 ? "there are no measurements"
                        : fmt::format("no measurement is sensitive to it: a 1% change of it moves no prediction "
                                      "by {} or more (the most: {}, by {})",
                                      percent(thresholds.min_sensitivity / 100), m.labels[top],
                                      percent(std::abs(c.j[top]) / 100)));
    else
      columns.push_back(std::move(c));
  }

  // 3. Confounded parameters: Gram–Schmidt, most sensitive first.
  std::stable_sort(columns.begin(), columns.end(), [](const Column& a, const Column& b) { return a.norm > b.norm; });
  std::vector<Column> kept;
  std::vector<Vector> basis;  // orthonormal
  for (auto& c : columns) {
    Vector r = c.j;
    for (const auto& b : basis) {
      const double k = dot(r, b);
      for (std::size_t i = 0; i < n; ++i) r[i] -= k * b[i];
    }
    const double left = std::sqrt(dot(r, r));
    if (left < thresholds.min_independence * c.norm) {
      std::vector<std::string> with;
      for (const auto& k : kept) with.push_back(k.p->name);
      refuse(*c.p, fmt::format("the measurements cannot tell it apart from {}: only {} of its effect is not "
                               "theirs (less than {})",
                               fmt::join(with, ", "), percent(left / c.norm), percent(thresholds.min_independence)));
      continue;
    }
    for (double& v : r) v /= left;
    basis.push_back(std::move(r));
    kept.push_back(std::move(c));
  }
  // 4. An uncertainty needs more points than parameters.
  while (!kept.empty() && kept.size() >= n) {
    refuse(*kept.back().p, fmt::format("{} measurement(s) cannot pin {} parameters with an uncertainty; it is the "
                                       "least sensitive",
                                       n, kept.size()));
    kept.pop_back();
  }
  // 5. Parameters the points do not pin down: the least pinned one is
  //    dropped while any is, first on the linearised problem at the start
  //    (no simulation needed), then on the fit itself.
  const auto drop_least_pinned = [&](const Vector& se) {
    const auto worst = static_cast<std::size_t>(std::max_element(se.begin(), se.end()) - se.begin());
    if (se.empty() || se[worst] <= thresholds.max_log_error) return false;
    refuse(*kept[worst].p,
           std::isfinite(se[worst])
               ? fmt::format("the measurements do not pin it down: fitted with the others, its standard error is "
                             "{:.0f}% of its value (more than the {:.0f}% this fit accepts)",
                             100 * se[worst], 100 * thresholds.max_log_error)
               : "the measurements do not pin it down: fitted with the others, it has no standard error");
    kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(worst));
    return true;
  };
  while (drop_least_pinned(linearised_standard_errors(jacobian_of(kept, n), out.before))) {
  }
  const auto profile_at = [&](const Vector& x) {
    hardware::HardwareProfile hw = start;
    for (std::size_t u = 0; u < kept.size(); ++u) kept[u].p->set(hw, from_x(*kept[u].p, x[u]));
    return hw;
  };
  LeastSquaresResult ls;
  while (!kept.empty()) {
    LeastSquaresProblem problem;
    for (const auto& c : kept) {
      problem.start.push_back(to_x(*c.p, c.p->get(start)));
      problem.lower.push_back(to_x(*c.p, c.p->lower));
      problem.upper.push_back(to_x(*c.p, c.p->upper));
    }
    problem.residuals = [&](const Vector& x) { return m.log_errors(profile_at(x)); };
    problem.step = kProbe;
    problem.tolerance = 1e-3;
    say(fmt::format("fit: fitting {} parameter(s) to {} measurement(s)", kept.size(), n));
    ls = levenberg_marquardt(problem, [&](int iteration, double cost) {
      say(fmt::format("fit: iteration {}: rms log error {:.4f}", iteration, std::sqrt(cost / static_cast<double>(n))));
    });
    out.evaluations += ls.evaluations;
    if (!drop_least_pinned(linearised_standard_errors(ls.jacobian, ls.residuals))) break;
  }
  if (kept.empty()) {
    out.after = out.before;
    return out;
  }
  out.fitted = profile_at(ls.x);
  out.after = ls.residuals;
  for (std::size_t u = 0; u < kept.size(); ++u) {
    const Parameter& p = *kept[u].p;
    hardware::FittedParameter f;
    f.name = p.name;
    f.value = from_x(p, ls.x[u]);
    if (ls.covariance) f.standard_error = std::sqrt(std::max(0.0, (*ls.covariance)[u][u])) * value_per_x(ls.x[u]);
    f.at_bound = ls.at_bound[u];
    // The points that pin it: at least half the largest sensitivity, at most five.
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return std::abs(ls.jacobian[a][u]) > std::abs(ls.jacobian[b][u]);
    });
    const double largest = std::abs(ls.jacobian[order.front()][u]);
    for (const std::size_t i : order)
      if (f.pinned_by.size() < 5 && std::abs(ls.jacobian[i][u]) >= 0.5 * largest && largest > 0)
        f.pinned_by.push_back(m.labels[i]);
    out.parameters.push_back(std::move(f));
  }
  return out;
}

}  // namespace ptsim::fit::internal

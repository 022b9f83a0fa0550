// Levenberg–Marquardt with bounds and a forward-difference Jacobian (see
// least_squares.hpp). The damping follows Marquardt (1963): the normal
// matrix's diagonal is scaled by (1 + λ), λ divided by 10 after a step that
// lowers the cost and multiplied by 10 after one that does not.
#include "ptsim/fit/least_squares.hpp"

#include <algorithm>
#include <cmath>

#include "ptsim/common/error.hpp"

namespace ptsim::fit {

namespace {

double squared_norm(const Vector& r) {
  double s = 0;
  for (const double v : r) s += v * v;
  return s;
}

Vector clamp(Vector x, const Vector& lower, const Vector& upper) {
  for (std::size_t j = 0; j < x.size(); ++j) x[j] = std::clamp(x[j], lower[j], upper[j]);
  return x;
}

}  // namespace

Matrix normal_matrix(const Matrix& j) {
  const std::size_t p = j.empty() ? 0 : j.front().size();
  Matrix a(p, Vector(p, 0.0));
  for (const auto& row : j)
    for (std::size_t u = 0; u < p; ++u)
      for (std::size_t v = 0; v < p; ++v) a[u][v] += row[u] * row[v];
  return a;
}

Vector gradient(const Matrix& j, const Vector& r) {
  const std::size_t p = j.empty() ? 0 : j.front().size();
  Vector g(p, 0.0);
  for (std::size_t i = 0; i < j.size(); ++i)
    for (std::size_t u = 0; u < p; ++u) g[u] += j[i][u] * r[i];
  return g;
}

std::optional<Matrix> inverse(Matrix a) {
  const std::size_t n = a.size();
  Matrix inv(n, Vector(n, 0.0));
  for (std::size_t i = 0; i < n; ++i) inv[i][i] = 1;
  double scale = 0;
  for (const auto& row : a)
    for (const double v : row) scale = std::max(scale, std::abs(v));
  if (scale == 0) return n == 0 ? std::optional<Matrix>(inv) : std::nullopt;
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    if (std::abs(a[pivot][c]) <= 1e-12 * scale) return std::nullopt;
    std::swap(a[pivot], a[c]);
    std::swap(inv[pivot], inv[c]);
    const double d = a[c][c];
    for (std::size_t k = 0; k < n; ++k) {
      a[c][k] /= d;
      inv[c][k] /= d;
    }
    for (std::size_t r = 0; r < n; ++r) {
      if (r == c || a[r][c] == 0) continue;
      const double f = a[r][c];
      for (std::size_t k = 0; k < n; ++k) {
        a[r][k] -= f * a[c][k];
        inv[r][k] -= f * inv[c][k];
      }
    }
  }
  return inv;
}

Matrix forward_jacobian(const std::function<Vector(const Vector&)>& residuals, const Vector& x, const Vector& r,
                        double step, const Vector& upper, int* evaluations) {
  Matrix j(r.size(), Vector(x.size(), 0.0));
  for (std::size_t u = 0; u < x.size(); ++u) {
    Vector moved = x;
    const double h = x[u] + step <= upper[u] ? step : -step;
    moved[u] += h;
    const Vector rm = residuals(moved);
    if (evaluations) ++*evaluations;
    if (rm.size() != r.size()) throw SimulationError("least squares: the residual count changed between evaluations");
    for (std::size_t i = 0; i < r.size(); ++i) j[i][u] = (rm[i] - r[i]) / h;
  }
  return j;
}

LeastSquaresResult levenberg_marquardt(const LeastSquaresProblem& problem, const IterationProgress& progress) {
  const std::size_t p = problem.start.size();
  LeastSquaresResult out;
  out.x = clamp(problem.start, problem.lower, problem.upper);
  out.residuals = problem.residuals(out.x);
  out.evaluations = 1;
  out.cost = squared_norm(out.residuals);
  double lambda = 1e-3;
  for (bool done = false; !done && out.iterations < problem.max_iterations;) {
    out.jacobian = forward_jacobian(problem.residuals, out.x, out.residuals, problem.step, problem.upper,
                                    &out.evaluations);
    const Matrix a = normal_matrix(out.jacobian);
    const Vector g = gradient(out.jacobian, out.residuals);
    bool improved = false;
    for (int attempt = 0; attempt < 10 && !improved; ++attempt) {
      Matrix damped = a;
      for (std::size_t u = 0; u < p; ++u) damped[u][u] = damped[u][u] == 0 ? lambda : damped[u][u] * (1 + lambda);
      const auto inv = inverse(damped);
      if (!inv) {
        lambda *= 10;
        continue;
      }
      Vector next = out.x;
      for (std::size_t u = 0; u < p; ++u)
        for (std::size_t v = 0; v < p; ++v) next[u] -= (*inv)[u][v] * g[v];
      next = clamp(next, problem.lower, problem.upper);
      const Vector r = problem.residuals(next);
      ++out.evaluations;
      const double cost = squared_norm(r);
      if (!(cost < out.cost)) {
        lambda *= 10;
        continue;
      }
      const double gain = (out.cost - cost) / std::max(out.cost, 1e-300);
      out.x = next;
      out.residuals = r;
      out.cost = cost;
      lambda = std::max(lambda / 10, 1e-9);
      improved = true;
      done = gain < problem.tolerance;
      if (progress) progress(out.iterations + 1, cost);
    }
    ++out.iterations;
    if (!improved) done = true;  // no step lowers the cost: a minimum within the bounds
  }
  out.jacobian = forward_jacobian(problem.residuals, out.x, out.residuals, problem.step, problem.upper,
                                  &out.evaluations);
  const std::size_t n = out.residuals.size();
  if (n > p)
    if (auto inv = inverse(normal_matrix(out.jacobian))) {
      const double s2 = out.cost / static_cast<double>(n - p);
      for (auto& row : *inv)
        for (double& v : row) v *= s2;
      out.covariance = std::move(*inv);
    }
  out.at_bound.resize(p);
  for (std::size_t u = 0; u < p; ++u)
    out.at_bound[u] = out.x[u] <= problem.lower[u] + 1e-12 || out.x[u] >= problem.upper[u] - 1e-12;
  return out;
}

}  // namespace ptsim::fit

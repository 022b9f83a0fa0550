// Bounded nonlinear least squares for a handful of parameters:
// Levenberg–Marquardt on residuals r(x) with a forward-difference Jacobian,
// each coordinate clamped to its bounds, and the covariance of the estimate
// from the Jacobian at the solution, s²·(JᵀJ)⁻¹ with s² = |r|² / (n − p)
// (Press et al., Numerical Recipes, 3rd ed., §15.5). Knows nothing of ptsim.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

namespace ptsim::fit {

using Vector = std::vector<double>;
using Matrix = std::vector<Vector>;  // row-major: m[i][j]

struct LeastSquaresProblem {
  /// Residuals at x; the same length at every x.
  std::function<Vector(const Vector&)> residuals;
  Vector start, lower, upper;
  double step = 0.02;        // forward-difference step in x
  int max_iterations = 25;
  double tolerance = 1e-7;   // stop when |r|² improves by less than this, relatively
};

struct LeastSquaresResult {
  Vector x;
  Vector residuals;
  Matrix jacobian;           // at x: n rows, p columns
  double cost = 0;           // |r|²
  int iterations = 0;
  int evaluations = 0;
  /// s²·(JᵀJ)⁻¹, when n > p and JᵀJ is invertible.
  std::optional<Matrix> covariance;
  std::vector<bool> at_bound;  // x[j] sits at lower[j] or upper[j]
};

/// Called after each accepted step: (iteration, cost).
using IterationProgress = std::function<void(int, double)>;

LeastSquaresResult levenberg_marquardt(const LeastSquaresProblem& problem, const IterationProgress& progress = {});

/// ∂r/∂x by forward differences of `step` (backwards where x + step passes
/// `upper`), given r at x.
Matrix forward_jacobian(const std::function<Vector(const Vector&)>& residuals, const Vector& x, const Vector& r,
                        double step, const Vector& upper, int* evaluations = nullptr);

/// (JᵀJ)⁻¹ by Gauss–Jordan elimination with partial pivoting; empty when it
/// is singular to working precision.
std::optional<Matrix> inverse(Matrix a);

/// JᵀJ and Jᵀr.
Matrix normal_matrix(const Matrix& j);
Vector gradient(const Matrix& j, const Vector& r);

}  // namespace ptsim::fit

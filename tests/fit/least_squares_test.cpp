// Levenberg–Marquardt against problems with closed-form answers.
#include "ptsim/fit/least_squares.hpp"

#include <cmath>

#include "test_support.hpp"

using namespace ptsim;

TEST_CASE("A straight line is fitted with the textbook standard errors", "[fit]") {
  // y = a + b·x at x = 0 … 4 plus 0.05·((x − 2)² − 2), a pattern orthogonal
  // to 1 and to x: the least-squares line is a = 1, b = 2 exactly, |r|² =
  // 0.0025 · (4 + 1 + 4 + 1 + 4) = 0.035 over n − p = 3, and (XᵀX)⁻¹ for
  // x = 0 … 4 is [[0.6, −0.2], [−0.2, 0.1]] (Σx = 10, Σx² = 30, det = 50).
  const fit::Vector xs = {0, 1, 2, 3, 4};
  const fit::Vector noise = {0.1, -0.05, -0.1, -0.05, 0.1};  // Σ = 0, Σ x·noise = 0
  const fit::Vector ys = {1 + noise[0], 3 + noise[1], 5 + noise[2], 7 + noise[3], 9 + noise[4]};
  fit::LeastSquaresProblem p;
  p.residuals = [&](const fit::Vector& v) {
    fit::Vector r;
    for (std::size_t i = 0; i < xs.size(); ++i) r.push_back(v[0] + v[1] * xs[i] - ys[i]);
    return r;
  };
  p.start = {0, 0};
  p.lower = {-10, -10};
  p.upper = {10, 10};
  p.step = 1e-3;
  const auto r = fit::levenberg_marquardt(p);
  CHECK(r.x[0] == Approx(1).margin(1e-6));
  CHECK(r.x[1] == Approx(2).margin(1e-6));
  const double rss = 0.035;
  CHECK(r.cost == Approx(rss).epsilon(1e-6));
  REQUIRE(r.covariance);
  const double s2 = rss / 3;
  CHECK((*r.covariance)[0][0] == Approx(0.6 * s2).epsilon(1e-4));
  CHECK((*r.covariance)[1][1] == Approx(0.1 * s2).epsilon(1e-4));
  CHECK((*r.covariance)[0][1] == Approx(-0.2 * s2).epsilon(1e-4));
  CHECK_FALSE(r.at_bound[0]);
}

TEST_CASE("A nonlinear fit converges and respects its bounds", "[fit]") {
  // t_i = w_i / θ observed with θ = 0.8: in log, r_i = log(w_i/θ) − log(w_i/0.8)
  // = log 0.8 − log θ, zero at θ = 0.8 from x = log θ = 0.
  fit::LeastSquaresProblem p;
  p.residuals = [](const fit::Vector& x) { return fit::Vector{std::log(0.8) - x[0], std::log(0.8) - x[0]}; };
  p.start = {0};
  p.lower = {std::log(0.05)};
  p.upper = {0};
  const auto r = fit::levenberg_marquardt(p);
  CHECK(std::exp(r.x[0]) == Approx(0.8).epsilon(1e-6));
  // The same data with the parameter held at most 0.9: the fit stops at the bound.
  p.lower = {std::log(0.9)};
  const auto bounded = fit::levenberg_marquardt(p);
  CHECK(std::exp(bounded.x[0]) == Approx(0.9).epsilon(1e-12));
  CHECK(bounded.at_bound[0]);
}

TEST_CASE("A singular normal matrix has no inverse", "[fit]") {
  CHECK_FALSE(fit::inverse({{1, 2}, {2, 4}}));
  const auto inv = fit::inverse({{4, 7}, {2, 6}});  // det 10
  REQUIRE(inv);
  CHECK((*inv)[0][0] == Approx(0.6));
  CHECK((*inv)[0][1] == Approx(-0.7));
  CHECK((*inv)[1][0] == Approx(-0.2));
  CHECK((*inv)[1][1] == Approx(0.4));
}

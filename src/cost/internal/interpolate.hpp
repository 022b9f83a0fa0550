// Piecewise-linear lookup on an ascending axis, clamped to its ends: the
// calibrated GEMM ratios (three axes), memory efficiencies and attention
// factors (one axis each) all read their tables through it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace ptsim::cost::internal {

/// Position of x on an ascending, non-empty axis: the lower index and the
/// weight of the upper neighbour, clamped to the axis.
inline std::pair<std::size_t, double> locate(const std::vector<double>& axis, double x) {
  if (axis.size() == 1 || x <= axis.front()) return {0, 0.0};
  if (x >= axis.back()) return {axis.size() - 2, 1.0};
  const auto it = std::upper_bound(axis.begin(), axis.end(), x);
  const auto i = static_cast<std::size_t>(it - axis.begin() - 1);
  return {i, (x - axis[i]) / (axis[i + 1] - axis[i])};
}

/// values (one per axis point) at x, linear between points, held at the ends.
inline double interpolate(const std::vector<double>& axis, const std::vector<double>& values, double x) {
  const auto [i, w] = locate(axis, x);
  return w > 0 ? values[i] * (1 - w) + values[i + 1] * w : values[i];
}

}  // namespace ptsim::cost::internal

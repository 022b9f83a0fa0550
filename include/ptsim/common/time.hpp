// Simulated time: integer nanoseconds, so that event ordering never depends on
// floating-point rounding (ns-3's rule). Shared by every stage of the flow.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace ptsim {

/// A point in, or a span of, simulated time, in integer nanoseconds.
class Time {
 public:
  constexpr Time() = default;

  static constexpr Time nanoseconds(std::int64_t ns) { return Time{ns}; }
  static constexpr Time microseconds(double us) { return from_seconds(us * 1e-6); }
  /// Rounds to the nearest nanosecond; seconds must be finite and non-negative.
  static constexpr Time from_seconds(double s) {
    return Time{static_cast<std::int64_t>(std::llround(s * 1e9))};
  }
  static constexpr Time max() { return Time{std::numeric_limits<std::int64_t>::max()}; }

  constexpr std::int64_t ns() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) / 1e9; }

  constexpr Time& operator+=(Time o) { ns_ += o.ns_; return *this; }
  constexpr Time& operator-=(Time o) { ns_ -= o.ns_; return *this; }
  friend constexpr Time operator+(Time a, Time b) { return Time{a.ns_ + b.ns_}; }
  friend constexpr Time operator-(Time a, Time b) { return Time{a.ns_ - b.ns_}; }
  friend constexpr auto operator<=>(Time, Time) = default;

 private:
  constexpr explicit Time(std::int64_t ns) : ns_(ns) {}
  std::int64_t ns_ = 0;
};

}  // namespace ptsim

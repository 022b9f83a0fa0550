// Simulated time: integer nanoseconds, so that event ordering never depends on
// floating-point rounding (ns-3's rule). Shared by every stage of the flow.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace ptsim {

/// Throws SimulationError: `seconds` (from `what`) is negative, not a number,
/// or beyond the clock's range. Absurd inputs (a zero-ish bandwidth, a 10^17-
/// parameter model) end here rather than in a wrapped integer.
[[noreturn]] void fail_time_range(double seconds, const char* what);

/// A point in, or a span of, simulated time, in integer nanoseconds.
class Time {
 public:
  constexpr Time() = default;

  static constexpr Time nanoseconds(std::int64_t ns) { return Time{ns}; }
  static constexpr Time microseconds(double us) { return from_seconds(us * 1e-6); }
  /// The longest span the clock holds with room to add spans: about 146 years.
  static constexpr double max_seconds = 4.6e9;

  /// Rounds to the nearest nanosecond; seconds outside [0, max_seconds] throw.
  static constexpr Time from_seconds(double s) {
    if (!(s >= 0 && s <= max_seconds)) fail_time_range(s, "a duration");
    return Time{static_cast<std::int64_t>(std::llround(s * 1e9))};
  }
  /// Rounds a non-negative nanosecond count up; counts beyond the clock throw.
  static constexpr Time ceil_nanoseconds(double ns) {
    if (!(ns >= 0 && ns <= max_seconds * 1e9)) fail_time_range(ns * 1e-9, "a duration");
    // std::ceil, inline: without SSE4.1 it is a call into libm, once per
    // kernel. Truncation is the floor of a non-negative value, and every
    // double this large with a fraction is below 2^52, where it is exact.
    const auto whole = static_cast<std::int64_t>(ns);
    return Time{whole + (static_cast<double>(whole) < ns ? 1 : 0)};
  }
  static constexpr Time max() { return Time{std::numeric_limits<std::int64_t>::max()}; }

  constexpr std::int64_t ns() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) / 1e9; }

  // Sums are checked: a simulated clock past its range is an error, not a wrap.
  constexpr Time& operator+=(Time o) { return *this = *this + o; }
  constexpr Time& operator-=(Time o) { ns_ -= o.ns_; return *this; }
  friend constexpr Time operator+(Time a, Time b) {
    std::int64_t sum = 0;
    if (__builtin_add_overflow(a.ns_, b.ns_, &sum)) fail_time_range(a.seconds() + b.seconds(), "the clock");
    return Time{sum};
  }
  friend constexpr Time operator-(Time a, Time b) { return Time{a.ns_ - b.ns_}; }
  friend constexpr auto operator<=>(Time, Time) = default;

 private:
  constexpr explicit Time(std::int64_t ns) : ns_(ns) {}
  std::int64_t ns_ = 0;
};

}  // namespace ptsim

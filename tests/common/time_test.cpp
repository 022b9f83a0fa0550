// Integer simulated time: conversions round to the nearest nanosecond.
#include "ptsim/common/time.hpp"

#include <cmath>

#include "ptsim/common/error.hpp"
#include "test_support.hpp"

using ptsim::Time;

TEST_CASE("Time converts seconds to integer nanoseconds", "[common]") {
  CHECK(Time::from_seconds(1.5e-9).ns() == 2);  // rounds half away from zero
  CHECK(Time::from_seconds(2.4e-9).ns() == 2);
  CHECK(Time::microseconds(3.4).ns() == 3400);
  CHECK(Time::from_seconds(16.5).seconds() == 16.5);
  CHECK((Time::nanoseconds(5) + Time::nanoseconds(7)).ns() == 12);
  CHECK(Time::nanoseconds(5) < Time::nanoseconds(6));
}

TEST_CASE("Simulated time refuses what it cannot hold instead of wrapping", "[common]") {
  // 4.6e9 s (146 years) is the longest span; sums are checked against int64.
  CHECK(Time::from_seconds(Time::max_seconds).ns() == 4'600'000'000'000'000'000);
  CHECK_THROWS_AS(Time::from_seconds(4.7e9), ptsim::SimulationError);
  CHECK_THROWS_AS(Time::from_seconds(-1e-9), ptsim::SimulationError);
  CHECK_THROWS_AS(Time::from_seconds(std::nan("")), ptsim::SimulationError);
  CHECK_THROWS_WITH(Time::from_seconds(1e300), Catch::Contains("a duration of 1e+300 s is outside"));
  const Time big = Time::from_seconds(4.6e9);
  CHECK((big + big).seconds() == 9.2e9);  // two longest spans still add
  CHECK_THROWS_WITH(big + big + big, Catch::Contains("the clock of 1.38e+10 s is outside"));
  CHECK_THROWS_AS(Time::max() + Time::nanoseconds(1), ptsim::SimulationError);
  CHECK(Time::ceil_nanoseconds(2.2).ns() == 3);
  CHECK_THROWS_AS(Time::ceil_nanoseconds(1e19), ptsim::SimulationError);
  // The inline ceiling agrees with std::ceil at the edges: zero, whole
  // values, the least fraction, the last doubles with a fraction (just below
  // 2^52) and the largest count the clock takes.
  for (const double ns : {0.0, 1e-300, 5.0, 4.999999999, 5.000000001, 4503599627370495.5,
                          4503599627370497.0, 9007199254740993.0, 4.6e18}) {
    INFO(ns);
    CHECK(Time::ceil_nanoseconds(ns).ns() == static_cast<std::int64_t>(std::ceil(ns)));
  }
  CHECK(Time::ceil_nanoseconds(4503599627370495.5).ns() == 4503599627370496);
  CHECK_THROWS_AS(Time::ceil_nanoseconds(-1e-300), ptsim::SimulationError);
}

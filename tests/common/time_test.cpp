// Integer simulated time: conversions round to the nearest nanosecond.
#include "ptsim/common/time.hpp"

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

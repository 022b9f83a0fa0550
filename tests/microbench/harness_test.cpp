// The micro-benchmark harness's statistics: repetition policy, pooled passes
// and the statistic a measurement file's time_s reports.
#include "microbench/harness.hpp"

#include <catch2/catch.hpp>

namespace mb = ptsim::microbench;

TEST_CASE("The harness warms up, then repeats until min_reps and target_s", "[microbench]") {
  mb::Method method;
  method.warmup = 2;
  method.min_reps = 3;
  method.max_reps = 100;
  method.target_s = 1.0;
  int calls = 0;
  // Each run "takes" 0.3 s: three reach 0.9 s < 1 s, the fourth passes it.
  const mb::Timing t = mb::time_repeated(method, [&] {
    ++calls;
    return 0.3;
  });
  CHECK(calls == 2 + 4);
  CHECK(t.reps == 4);
  CHECK(t.min_s == 0.3);
  CHECK(t.max_s == 0.3);
}

TEST_CASE("Pooled passes report the median or the minimum of all samples", "[microbench]") {
  mb::Timing first;
  first.samples = {3e-6, 1e-6, 2e-6};
  first.summarize();
  CHECK(first.median_s == 2e-6);
  mb::Timing second;
  second.samples = {5e-6, 4e-6, 0.5e-6};
  second.summarize();
  first.absorb(second);
  // Pooled: 0.5, 1, 2, 3, 4, 5 µs.
  CHECK(first.reps == 6);
  CHECK(first.min_s == 0.5e-6);
  CHECK(first.max_s == 5e-6);
  CHECK(first.median_s == Approx(2.5e-6));
  mb::Method method;
  CHECK(first.reported_s(method) == Approx(2.5e-6));
  CHECK(std::string(method.statistic()) == "median");
  method.use_min = true;
  CHECK(first.reported_s(method) == 0.5e-6);
  CHECK(std::string(method.statistic()) == "min");
}

TEST_CASE("A sustained method runs the kernel back to back before timing it", "[microbench]") {
  mb::Method method;
  method.warmup = 1;
  method.min_reps = 2;
  method.max_reps = 2;
  method.target_s = 0;
  method.sustain_s = 1.0;
  int calls = 0;
  // 0.25 s a run: four sustaining runs reach 1 s, then the two timed ones.
  const mb::Timing t = mb::time_repeated(method, [&] {
    ++calls;
    return 0.25;
  });
  CHECK(calls == 1 + 4 + 2);
  CHECK(t.reps == 2);
  // A timer that reads zero still ends the sustaining phase.
  calls = 0;
  method.sustain_s = 1e-5;
  mb::time_repeated(method, [&] {
    ++calls;
    return 0.0;
  });
  CHECK(calls == 1 + 100 + 2);
}

// The future event set pops in (time, insertion) order.
#include "ptsim/engine/event_queue.hpp"

#include <algorithm>
#include <random>
#include <set>

#include "ptsim/common/error.hpp"
#include "test_support.hpp"

using namespace ptsim;

TEST_CASE("Events at equal times pop in insertion order", "[engine]") {
  engine::EventQueue q;
  q.push(engine::Event::make(Time::nanoseconds(5), 1, 0, 0));
  q.push(engine::Event::make(Time::nanoseconds(3), 2, 0, 0));
  q.push(engine::Event::make(Time::nanoseconds(5), 3, 0, 0));
  q.push(engine::Event::make(Time::nanoseconds(5), 4, 0, 0));
  q.push(engine::Event::make(Time::nanoseconds(1), 5, 0, 0));
  std::vector<std::uint32_t> order;
  while (!q.empty()) order.push_back(q.pop().target());
  CHECK(order == std::vector<std::uint32_t>{5, 2, 1, 3, 4});
}

TEST_CASE("Interleaved pushes and pops follow (time, insertion) order over a wide range of times",
          "[engine]") {
  // Reference: a multiset ordered by (time, push number). Times span 1 ns to
  // 2^40 ns and repeat often, so every bucket of the radix heap is used and
  // ties are common.
  std::mt19937_64 rng(2026);
  engine::EventQueue q;
  std::set<std::pair<std::int64_t, std::uint32_t>> reference;
  std::uint32_t next = 0;
  std::int64_t now = 0;
  for (int round = 0; round < 20000; ++round) {
    const int pushes = static_cast<int>(rng() % 4);
    for (int i = 0; i < pushes; ++i) {
      const int scale = static_cast<int>(rng() % 41);
      const std::int64_t delay = rng() % 3 == 0 ? 0 : static_cast<std::int64_t>(rng() % (std::uint64_t{1} << scale));
      q.push(engine::Event::make(Time::nanoseconds(now + delay), next, 0, 0));
      reference.insert({now + delay, next});
      ++next;
    }
    if (!reference.empty() && rng() % 2 == 0) {
      const engine::Event e = q.pop();
      const auto expected = *reference.begin();
      reference.erase(reference.begin());
      REQUIRE(e.at.ns() == expected.first);
      REQUIRE(e.target() == expected.second);
      now = e.at.ns();
    }
  }
  while (!reference.empty()) {
    REQUIRE(q.pop().target() == reference.begin()->second);
    reference.erase(reference.begin());
  }
  CHECK(q.empty());
}

TEST_CASE("The queue keeps (time, insertion) order when it outgrows its sorted array", "[engine]") {
  // The first 64 pending events sit in a sorted array; the 65th moves them
  // all into the radix heap. Ties straddle the move: 40 events at 7 ns, 30 at
  // 5 ns, then 30 more at 7 ns and 10 at 5 ns, after one pop at 5 ns.
  engine::EventQueue q;
  std::uint32_t next = 0;
  std::vector<std::pair<std::int64_t, std::uint32_t>> expected;
  const auto push = [&](std::int64_t at, int count) {
    for (int i = 0; i < count; ++i) {
      q.push(engine::Event::make(Time::nanoseconds(at), next, 0, 0));
      expected.emplace_back(at, next++);
    }
  };
  push(7, 40);
  push(5, 30);
  std::stable_sort(expected.begin(), expected.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const engine::Event first = q.pop();
  CHECK(first.target() == expected.front().second);
  expected.erase(expected.begin());
  CHECK(q.more_now());  // 29 more at 5 ns
  push(7, 30);  // the array overflows: 69 pending
  push(5, 10);
  std::stable_sort(expected.begin(), expected.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  REQUIRE(q.size() == expected.size());
  for (const auto& [at, target] : expected) {
    const engine::Event e = q.pop();
    REQUIRE(e.at.ns() == at);
    REQUIRE(e.target() == target);
  }
  CHECK(q.empty());
  CHECK_THROWS(q.pop());
}

TEST_CASE("An event pushed before the time already reached is an internal error", "[engine]") {
  engine::EventQueue q;
  q.push(engine::Event::make(Time::nanoseconds(10), 1, 0, 0));
  q.pop();
  CHECK_THROWS(q.push(engine::Event::make(Time::nanoseconds(9), 2, 0, 0)));
  q.push(engine::Event::make(Time::nanoseconds(10), 3, 0, 0));
  CHECK(q.pop().target() == 3);
}

TEST_CASE("An event packs its target, kind and stream into one word, and targets beyond it are refused",
          "[engine]") {
  const auto e = engine::Event::make(Time::nanoseconds(42), engine::Event::kMaxTarget, 7u, 5, 31);
  CHECK(sizeof(engine::Event) == 16);
  CHECK(e.at.ns() == 42);
  CHECK(e.target() == (1u << 24) - 1);
  CHECK(e.kind() == 5);
  CHECK(e.stream() == 31);
  CHECK(e.version == 7u);
  const auto zero = engine::Event::make(Time{}, 0, 0, 0);
  CHECK(zero.target() == 0);
  CHECK(zero.kind() == 0);
  CHECK(zero.stream() == 0);
  CHECK_NOTHROW(engine::Event::check_target(engine::Event::kMaxTarget, "flows"));
  CHECK_THROWS_AS(engine::Event::check_target(std::size_t{1} << 24, "flows"), SimulationError);
  CHECK_THROWS_WITH(engine::Event::check_target(std::size_t{1} << 24, "flows"),
                    Catch::Contains("more than 16777216 flows at once"));
}

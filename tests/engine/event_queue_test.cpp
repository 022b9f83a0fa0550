// The future event set pops in (time, insertion) order.
#include "ptsim/engine/event_queue.hpp"

#include "test_support.hpp"

using namespace ptsim;

TEST_CASE("Events at equal times pop in insertion order", "[engine]") {
  engine::EventQueue q;
  q.push({Time::nanoseconds(5), 0, 1, 0, 0, 0});
  q.push({Time::nanoseconds(3), 0, 2, 0, 0, 0});
  q.push({Time::nanoseconds(5), 0, 3, 0, 0, 0});
  q.push({Time::nanoseconds(5), 0, 4, 0, 0, 0});
  q.push({Time::nanoseconds(1), 0, 5, 0, 0, 0});
  std::vector<std::uint32_t> order;
  while (!q.empty()) order.push_back(q.pop().target);
  CHECK(order == std::vector<std::uint32_t>{5, 2, 1, 3, 4});
}

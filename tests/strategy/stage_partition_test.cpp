// Layers over pipeline stages.
#include "ptsim/strategy/stage_partition.hpp"

#include "test_support.hpp"

using namespace ptsim;

namespace {
std::vector<std::int64_t> counts(const std::vector<strategy::LayerRange>& ranges) {
  std::vector<std::int64_t> c;
  std::int64_t next = 0;
  for (const auto& r : ranges) {
    CHECK(r.first == next);  // contiguous, in order
    next += r.count;
    c.push_back(r.count);
  }
  return c;
}
}  // namespace

TEST_CASE("Stages split layers evenly, extras to inner stages first", "[strategy]") {
  CHECK(counts(strategy::make_stage_partition(96, 8)) == std::vector<std::int64_t>(8, 12));
  CHECK(counts(strategy::make_stage_partition(10, 4)) == std::vector<std::int64_t>{2, 3, 3, 2});
  // Llama 3 405B: 126 layers over 16 stages = 7 r 14: stages 1..14 get 8.
  const auto llama = counts(strategy::make_stage_partition(126, 16));
  CHECK(llama.front() == 7);
  CHECK(llama.back() == 7);
  CHECK(llama[1] == 8);
  CHECK(counts(strategy::make_stage_partition(5, 2)) == std::vector<std::int64_t>{3, 2});
  CHECK(counts(strategy::make_stage_partition(3, 3)) == std::vector<std::int64_t>{1, 1, 1});
}

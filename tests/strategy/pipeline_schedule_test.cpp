// Pipeline schedule orders: warm-up lengths, F before B, in-flight bounds.
#include "ptsim/strategy/pipeline_schedule.hpp"

#include "test_support.hpp"

using namespace ptsim::strategy;

namespace {
// Most micro-batches whose forward has run and backward has not.
std::int64_t max_in_flight(const std::vector<PipelineStep>& steps) {
  std::int64_t live = 0, most = 0;
  for (const auto& s : steps) {
    live += s.pass == Pass::Forward ? 1 : -1;
    most = std::max(most, live);
  }
  return most;
}
}  // namespace

TEST_CASE("1F1B stage 0 of 4 with 8 micro-batches", "[strategy]") {
  // Megatron-LM: warm-up = stages − stage − 1 = 3 forwards, then F/B pairs, then drain:
  //   F0 F1 F2 | F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 | B5 B6 B7
  const auto steps = make_pipeline_order(ScheduleKind::OneFOneB, 0, 4, 8);
  const std::vector<PipelineStep> expected = {
      {Pass::Forward, 0},  {Pass::Forward, 1},  {Pass::Forward, 2},  {Pass::Forward, 3},
      {Pass::Backward, 0}, {Pass::Forward, 4},  {Pass::Backward, 1}, {Pass::Forward, 5},
      {Pass::Backward, 2}, {Pass::Forward, 6},  {Pass::Backward, 3}, {Pass::Forward, 7},
      {Pass::Backward, 4}, {Pass::Backward, 5}, {Pass::Backward, 6}, {Pass::Backward, 7}};
  CHECK(steps == expected);
}

TEST_CASE("Every schedule runs each micro-batch's F before its B, once each", "[strategy]") {
  for (const auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
    for (std::int64_t p : {1, 2, 4, 8}) {
      for (std::int64_t m : {1, 3, 8, 32}) {
        for (std::int64_t s = 0; s < p; ++s) {
          const auto steps = make_pipeline_order(kind, s, p, m);
          REQUIRE(steps.size() == static_cast<std::size_t>(2 * m));
          std::vector<int> state(static_cast<std::size_t>(m), 0);
          for (const auto& step : steps) {
            auto& st = state[static_cast<std::size_t>(step.microbatch)];
            CHECK(st == (step.pass == Pass::Forward ? 0 : 1));
            ++st;
          }
          // 1F1B keeps at most p − s micro-batches alive; GPipe all m.
          if (kind == ScheduleKind::OneFOneB) CHECK(max_in_flight(steps) == std::min(p - s, m));
          if (kind == ScheduleKind::GPipe) CHECK(max_in_flight(steps) == m);
        }
      }
    }
  }
}

TEST_CASE("1F1B warm-up is stages − stage − 1 forwards", "[strategy]") {
  for (std::int64_t s = 0; s < 8; ++s) {
    const auto steps = make_pipeline_order(ScheduleKind::OneFOneB, s, 8, 16);
    std::int64_t leading_forwards = 0;
    while (steps[static_cast<std::size_t>(leading_forwards)].pass == Pass::Forward) ++leading_forwards;
    CHECK(leading_forwards == 8 - s);  // warm-up plus the first steady-state forward
  }
}

TEST_CASE("Naive model parallelism and GPipe orders", "[strategy]") {
  CHECK(make_pipeline_order(ScheduleKind::Naive, 1, 4, 1) ==
        std::vector<PipelineStep>{{Pass::Forward, 0}, {Pass::Backward, 0}});
  // GPipe: all forwards, then backwards in reverse micro-batch order.
  CHECK(make_pipeline_order(ScheduleKind::GPipe, 0, 2, 3) ==
        std::vector<PipelineStep>{{Pass::Forward, 0}, {Pass::Forward, 1}, {Pass::Forward, 2},
                                  {Pass::Backward, 2}, {Pass::Backward, 1}, {Pass::Backward, 0}});
}

// The schedule descriptors: one per ScheduleKind, found by their names, and
// the figures the planner and the workload builder read off them held to
// their schedules' closed forms.
#include "ptsim/strategy/schedule.hpp"

#include <algorithm>
#include "test_support.hpp"
#include <set>
#include <string>

using namespace ptsim::strategy;

TEST_CASE("Every schedule has one descriptor, found by its name", "[strategy]") {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < schedules().size(); ++i) {
    const ScheduleDescriptor& d = schedules()[i];
    CHECK(static_cast<std::size_t>(d.kind) == i);
    CHECK(&describe(d.kind) == &d);
    CHECK(find_schedule(d.name) == &d);
    CHECK(to_string(d.kind) == d.name);
    names.insert(d.name);
  }
  CHECK(names.size() == 7);
  CHECK(find_schedule("1F1B") == nullptr);  // names are exact
  CHECK(std::string(schedule_choices_help()) ==
        "naive | gpipe | 1f1b (default) | interleaved (default when vpp > 1) | zb-h1 | zb-h2 | dualpipe");
}

TEST_CASE("Forwards before the first backward follow each schedule's warm-up", "[strategy]") {
  for (const std::int64_t p : {2, 4, 8})
    for (const std::int64_t m : {p, 2 * p, 3 * p + 1}) {
      for (std::int64_t s = 0; s < p; ++s) {
        INFO("p " << p << " m " << m << " stage " << s);
        // 1F1B and ZB-H1: p − s (Narayanan et al. 2021; Qi et al. 2023's H1).
        CHECK(forwards_before_first_backward(ScheduleKind::OneFOneB, s, p, m, 1) == std::min(p - s, m));
        CHECK(forwards_before_first_backward(ScheduleKind::ZbH1, s, p, m, 1) == std::min(p - s, m));
        // ZB-H2: its backward delay 2(p − 1 − s), plus the forward it follows.
        CHECK(forwards_before_first_backward(ScheduleKind::ZbH2, s, p, m, 1) == std::min(2 * (p - 1 - s) + 1, m));
        CHECK(forwards_before_first_backward(ScheduleKind::GPipe, s, p, m, 1) == m);
        if (m % p == 0) {
          // Megatron-Core's interleaved warm-up, all of it when m = p, then one steady forward.
          const std::int64_t v = 2;
          const std::int64_t warmup = m == p ? m * v : std::min((p - s - 1) * 2 + (v - 1) * p, m * v);
          CHECK(forwards_before_first_backward(ScheduleKind::Interleaved, s, p, m, v) ==
                std::min(warmup + 1, m * v));
          // Combined: one more warm-up forward, whose steady forward is paired
          // with the first backward and not held whole.
          CHECK(forwards_before_first_backward(ScheduleKind::Interleaved, s, p, m, v, true) ==
                std::min(warmup + 1, m * v));
        }
      }
    }
  // DualPipe, 4 ranks and 8 micro-batches (pipeline_schedule.cpp's picture):
  // rank 0 runs F0 F1 F2 F4' before Bi4', rank 1 F0 F4' F1 F5' F2 before B4'.
  CHECK(forwards_before_first_backward(ScheduleKind::DualPipe, 0, 4, 8, 2) == 4);
  CHECK(forwards_before_first_backward(ScheduleKind::DualPipe, 1, 4, 8, 2) == 5);
  CHECK(forwards_before_first_backward(ScheduleKind::Naive, 0, 4, 1, 1) == 1);
  // Combined 1F1B on one stage, F0 | F1~B0 …: F0 is held whole, F1 runs
  // layer by layer beside B0, which frees what it adds.
  CHECK(forwards_before_first_backward(ScheduleKind::OneFOneB, 0, 1, 4, 1, true) == 1);
  CHECK(forwards_before_first_backward(ScheduleKind::OneFOneB, 0, 1, 1, 1, true) == 1);
}

TEST_CASE("A micro-batch's path is pp·v stages interleaved, pp otherwise", "[strategy]") {
  CHECK(path_stages(ScheduleKind::OneFOneB, 4, 1) == 4);
  CHECK(path_stages(ScheduleKind::Interleaved, 4, 3) == 12);
  CHECK(path_stages(ScheduleKind::DualPipe, 4, 2) == 4);  // two directions, each over the 4 stages
}

TEST_CASE("A schedule's rules name the field, the value and the fix", "[strategy]") {
  ScheduleShape shape;
  shape.pp = 3;
  shape.vpp = 1;
  shape.microbatches = 8;
  shape.global_batch_size = 64;
  shape.sequences_per_microbatch_step = 8;
  const auto odd = describe(ScheduleKind::DualPipe).check_pipeline(shape);
  REQUIRE(odd);
  CHECK(odd->field == "pp");
  CHECK(odd->value == "3");
  CHECK(describe(ScheduleKind::Interleaved).check_pipeline(shape)->field == "schedule");
  shape.vpp = 2;
  CHECK_FALSE(describe(ScheduleKind::Interleaved).check_pipeline(shape));
  // 8 micro-batches in groups of 3: refused, with the batch that would work (3 · 8 sequences).
  const auto groups = describe(ScheduleKind::Interleaved).check_microbatches(shape);
  REQUIRE(groups);
  CHECK(groups->field == "global_batch_size");
  CHECK(groups->fix == "use a multiple of 24");
  shape.pp = 4;
  shape.microbatches = 6;  // DualPipe needs an even count ≥ 2·pp = 8
  CHECK(describe(ScheduleKind::DualPipe).check_microbatches(shape));
  shape.microbatches = 8;
  CHECK_FALSE(describe(ScheduleKind::DualPipe).check_microbatches(shape));
  CHECK_FALSE(describe(ScheduleKind::OneFOneB).check_microbatches(shape));  // 1F1B takes any count
}

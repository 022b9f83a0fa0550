// Pipeline schedule orders: warm-up lengths, F before B, in-flight bounds,
// and makespans of every schedule on an abstract executor (schedule_timing.hpp).
#include "ptsim/strategy/pipeline_schedule.hpp"

#include <map>
#include <set>
#include <string>
#include <utility>

#include "ptsim/common/error.hpp"
#include "strategy/schedule_timing.hpp"
#include "test_support.hpp"

using namespace ptsim::strategy;

namespace {
// Most micro-batches (per chunk) whose forward has run on the stage and whose
// `end` has not: BackwardInput counts until the input gradients (a full
// Backward or B), BackwardWeight until the weight gradients (Backward or W).
std::int64_t max_in_flight(const std::vector<PipelineStep>& steps,
                           Pass end = Pass::BackwardInput) {
  std::int64_t live = 0, most = 0;
  for (const auto& s : steps) {
    if (s.pass == Pass::Forward) ++live;
    if (s.pass == Pass::Backward || s.pass == end) --live;
    most = std::max(most, live);
  }
  return most;
}

using ptsim::test::all_orders;
using ptsim::test::StepCosts;
using ptsim::test::time_schedule;

PipelineStep F(std::int64_t mb, std::int64_t chunk = 0, bool overlapped = false) {
  return {Pass::Forward, mb, chunk, overlapped};
}
PipelineStep B(std::int64_t mb, std::int64_t chunk = 0) { return {Pass::Backward, mb, chunk}; }
PipelineStep Bi(std::int64_t mb, std::int64_t chunk = 0) {
  return {Pass::BackwardInput, mb, chunk};
}
PipelineStep W(std::int64_t mb, std::int64_t chunk = 0) {
  return {Pass::BackwardWeight, mb, chunk};
}

using MicrobatchChunk = std::pair<std::int64_t, std::int64_t>;

// Problems with one stage's order, "" when none: every (micro-batch, chunk) of
// `expected` runs one forward and then either one full backward or one B and
// then one W, and nothing else runs; per chunk, forwards, backwards (full or
// B) and W each take the micro-batches in increasing order.
std::string order_problems(const std::vector<PipelineStep>& steps,
                           const std::set<MicrobatchChunk>& expected) {
  enum State { None, Forwarded, InputDone, Done };
  std::map<MicrobatchChunk, State> state;
  std::map<std::pair<std::int64_t, int>, std::int64_t> last;  // (chunk, F/B/W) → micro-batch
  std::string problems;
  for (const auto& s : steps) {
    const MicrobatchChunk key{s.microbatch, s.chunk};
    const std::string name = "mb " + std::to_string(s.microbatch) + " chunk " +
                             std::to_string(s.chunk);
    if (expected.count(key) == 0) problems += "unexpected " + name + "; ";
    auto& st = state[key];
    const int kind = s.pass == Pass::Forward ? 0 : s.pass == Pass::BackwardWeight ? 2 : 1;
    const State before = s.pass == Pass::Forward          ? None
                         : s.pass == Pass::BackwardWeight ? InputDone
                                                          : Forwarded;
    if (st != before) problems += "out of order: " + name + "; ";
    st = s.pass == Pass::Forward ? Forwarded : s.pass == Pass::BackwardInput ? InputDone : Done;
    const auto [it, first] = last.try_emplace({s.chunk, kind}, s.microbatch);
    if (!first && it->second >= s.microbatch) problems += "micro-batch order: " + name + "; ";
    it->second = s.microbatch;
  }
  for (const auto& key : expected)
    if (state[key] != Done)
      problems += "unfinished mb " + std::to_string(key.first) + " chunk " +
                  std::to_string(key.second) + "; ";
  return problems;
}

std::set<MicrobatchChunk> every_microbatch(std::int64_t m, std::int64_t chunks) {
  std::set<MicrobatchChunk> all;
  for (std::int64_t mb = 0; mb < m; ++mb)
    for (std::int64_t c = 0; c < chunks; ++c) all.insert({mb, c});
  return all;
}

// DualPipe: chunk 0 carries micro-batches 0 … m/2 − 1, chunk 1 the rest.
std::set<MicrobatchChunk> dual_pipe_microbatches(std::int64_t m) {
  std::set<MicrobatchChunk> all;
  for (std::int64_t mb = 0; mb < m; ++mb) all.insert({mb, mb < m / 2 ? 0 : 1});
  return all;
}

// Every stage of `kind` run with F = B = W = 1 (a full backward costs 2).
ptsim::test::ScheduleTiming unit_timing(ScheduleKind kind, std::int64_t p, std::int64_t m,
                                       std::int64_t chunks = 1) {
  return time_schedule(kind, all_orders(kind, p, m, chunks), StepCosts{1, 1, 1});
}

void check_runs_everything(ScheduleKind kind, std::int64_t p, std::int64_t m, std::int64_t v,
                           const std::set<MicrobatchChunk>& expected) {
  INFO("schedule " << to_string(kind) << ", p = " << p << ", m = " << m << ", chunks = " << v);
  const auto orders = all_orders(kind, p, m, v);
  for (std::int64_t s = 0; s < p; ++s) {
    INFO("stage " << s);
    CHECK(order_problems(orders[static_cast<std::size_t>(s)], expected).empty());
  }
  // Every step runs, so each stage is busy F + B + W per (micro-batch, chunk)
  // it holds, whatever the split.
  const auto timing = time_schedule(kind, orders, StepCosts{1, 1, 1});
  CHECK(timing.error.empty());
  const auto held = static_cast<std::int64_t>(expected.size());
  for (const auto busy : timing.busy) CHECK(busy == 3 * held);
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

// ---- interleaved 1F1B, zero bubble and DualPipe ----

TEST_CASE("New schedules run every micro-batch and chunk once in order without deadlock",
          "[strategy]") {
  for (std::int64_t p : {1, 2, 3, 4, 8})
    for (std::int64_t k : {1, 2, 3, 4})
      for (std::int64_t v : {2, 3, 4})
        check_runs_everything(ScheduleKind::Interleaved, p, k * p, v, every_microbatch(k * p, v));
  for (const auto kind : {ScheduleKind::OneFOneB, ScheduleKind::ZbH1, ScheduleKind::ZbH2})
    for (std::int64_t p : {1, 2, 3, 4, 8})
      for (std::int64_t m : {1, 2, 3, 4, 7, 8, 9, 16, 33})
        check_runs_everything(kind, p, m, 1, every_microbatch(m, 1));
  for (std::int64_t p : {2, 4, 6, 8})
    for (std::int64_t m : {2 * p, 2 * p + 2, 4 * p, std::int64_t{20}, std::int64_t{34}})
      if (m >= 2 * p)
        check_runs_everything(ScheduleKind::DualPipe, p, m, 2, dual_pipe_microbatches(m));
}

TEST_CASE("The schedule executor times 1F1B and reports deadlocks", "[strategy]") {
  // 1F1B, p = 2, m = 2, F = 1, full backward 2: stage 1 runs F0 [1,2] B0 [2,4]
  // F1 [4,5] B1 [5,7]; stage 0 F0 [0,1] F1 [1,2] B0 [4,6] B1 [7,9]: 9 = (m + p − 1)(F + B).
  const auto t = unit_timing(ScheduleKind::OneFOneB, 2, 2);
  REQUIRE(t.error.empty());
  CHECK(t.makespan == 9);
  CHECK(t.idle == std::vector<std::int64_t>{3, 3});
  CHECK(t.steps[0][2].start == 4);
  CHECK(t.steps[0][3].start == 7);
  // Stage 1 runs micro-batch 1 first, whose forward stage 0 runs only after
  // B0, which waits for stage 1's B0: a cycle.
  const std::vector<std::vector<PipelineStep>> crossed = {{F(0), B(0), F(1), B(1)},
                                                          {F(1), B(1), F(0), B(0)}};
  CHECK_FALSE(time_schedule(ScheduleKind::OneFOneB, crossed, StepCosts{}).error.empty());
  CHECK_FALSE(time_schedule(ScheduleKind::OneFOneB, {{F(0), F(0), B(0)}}, StepCosts{})
                  .error.empty());
}

TEST_CASE("virtual_stage places each model chunk along its micro-batch's path", "[strategy]") {
  // Interleaved: chunk c of stage s is virtual stage c·p + s.
  CHECK(virtual_stage(ScheduleKind::Interleaved, 1, 4, 0) == 1);
  CHECK(virtual_stage(ScheduleKind::Interleaved, 1, 4, 2) == 9);
  // DualPipe: rank r runs stage r of direction 0 and stage p − 1 − r of direction 1.
  CHECK(virtual_stage(ScheduleKind::DualPipe, 1, 4, 0) == 1);
  CHECK(virtual_stage(ScheduleKind::DualPipe, 1, 4, 1) == 2);
  CHECK(virtual_stage(ScheduleKind::DualPipe, 3, 4, 1) == 0);
  CHECK(virtual_stage(ScheduleKind::OneFOneB, 3, 4, 0) == 3);
}

TEST_CASE("Interleaved 1F1B follows Megatron-Core's schedule table", "[strategy]") {
  // p = 2, v = 2, m = 4. Forward table (groups of p micro-batches, chunk by
  // chunk): 0.0 1.0 0.1 1.1 2.0 3.0 2.1 3.1; backward table: the same with the
  // chunks reversed. Warm-up = (p − s − 1)·2 + (v − 1)·p = 4 on stage 0, 2 on stage 1.
  CHECK(make_pipeline_order(ScheduleKind::Interleaved, 0, 2, 4, 2) ==
        std::vector<PipelineStep>{F(0, 0), F(1, 0), F(0, 1), F(1, 1), F(2, 0), B(0, 1), F(3, 0),
                                  B(1, 1), F(2, 1), B(0, 0), F(3, 1), B(1, 0), B(2, 1), B(3, 1),
                                  B(2, 0), B(3, 0)});
  CHECK(make_pipeline_order(ScheduleKind::Interleaved, 1, 2, 4, 2) ==
        std::vector<PipelineStep>{F(0, 0), F(1, 0), F(0, 1), B(0, 1), F(1, 1), B(1, 1), F(2, 0),
                                  B(0, 0), F(3, 0), B(1, 0), F(2, 1), B(2, 1), F(3, 1), B(3, 1),
                                  B(2, 0), B(3, 0)});
  // p = 4, v = 2, m = 8: warm-up 2(3 − s) + 4, plus the first steady forward.
  for (std::int64_t s = 0; s < 4; ++s) {
    const auto steps = make_pipeline_order(ScheduleKind::Interleaved, s, 4, 8, 2);
    std::int64_t leading = 0;
    while (steps[static_cast<std::size_t>(leading)].pass == Pass::Forward) ++leading;
    CHECK(leading == 2 * (3 - s) + 4 + 1);
  }
  // m = p: every forward is warm-up (Megatron-Core before its tunable schedule).
  const auto all_warm = make_pipeline_order(ScheduleKind::Interleaved, 3, 4, 4, 2);
  for (std::size_t i = 0; i < 8; ++i) CHECK(all_warm[i].pass == Pass::Forward);
  // Megatron-Core rejects a last group smaller than p; with groups of p the
  // order would deadlock (p = 4, m = 9, v = 3: stage 3's B of micro-batch 4 on
  // chunk 1 waits for stage 0, which first needs stage 3's forward of 8).
  CHECK_THROWS_AS(make_pipeline_order(ScheduleKind::Interleaved, 0, 4, 9, 3), ptsim::InternalError);
  CHECK_THROWS_AS(make_pipeline_order(ScheduleKind::Interleaved, 0, 4, 2, 2), ptsim::InternalError);
  CHECK_THROWS_AS(make_pipeline_order(ScheduleKind::Interleaved, 0, 4, 8, 1), ptsim::InternalError);
}

TEST_CASE("Combined 1F1B adds a warm-up forward and overlaps every steady forward with a backward", "[strategy]") {
  // One stage (Megatron-Core combined_1f1b_schedule_for_no_pipelining), m = 3:
  // F0 | F1~B0 F2~B1 | B2.
  CHECK(make_pipeline_order(ScheduleKind::OneFOneB, 0, 1, 3, 1, true) ==
        std::vector<PipelineStep>{F(0), F(1, 0, true), B(0), F(2, 0, true), B(1), B(2)});
  // Interleaved p = 2, v = 2, m = 4, stage 1: warm-up (p − s − 1)·2 + (v − 1)·p + 1 = 3
  // forwards of the table 0.0 1.0 0.1 1.1 2.0 3.0 2.1 3.1, then forward 3 + k with
  // backward k (chunks reversed), then the last three backwards.
  CHECK(make_pipeline_order(ScheduleKind::Interleaved, 1, 2, 4, 2, true) ==
        std::vector<PipelineStep>{F(0, 0), F(1, 0), F(0, 1), F(1, 1, true), B(0, 1), F(2, 0, true), B(1, 1),
                                  F(3, 0, true), B(0, 0), F(2, 1, true), B(1, 0), F(3, 1, true), B(2, 1), B(3, 1),
                                  B(2, 0), B(3, 0)});
  // Every micro-batch still runs once in order, the pair's two halves belong
  // to different micro-batches (neither waits for the other), and the stages
  // run to completion.
  for (std::int64_t p : {1, 2, 4})
    for (std::int64_t k : {1, 2, 3})
      for (std::int64_t v : {1, 2, 3}) {
        if (p > 1 && v == 1) continue;  // Megatron-Core: interleaved only with pp > 1
        const ScheduleKind kind = v == 1 ? ScheduleKind::OneFOneB : ScheduleKind::Interleaved;
        const std::int64_t m = k * p + (v == 1 ? 2 : 0);
        INFO("p = " << p << ", m = " << m << ", v = " << v);
        std::vector<std::vector<PipelineStep>> orders;
        for (std::int64_t s = 0; s < p; ++s) {
          auto steps = make_pipeline_order(kind, s, p, m, v, true);
          CHECK(order_problems(steps, every_microbatch(m, v)).empty());
          for (std::size_t i = 0; i + 1 < steps.size(); ++i)
            if (steps[i].overlapped_with_next) {
              CHECK(steps[i + 1].pass == Pass::Backward);
              CHECK(steps[i].microbatch != steps[i + 1].microbatch);
            }
          orders.push_back(std::move(steps));
        }
        CHECK(time_schedule(kind, orders, StepCosts{1, 1, 1}).error.empty());
      }
}

TEST_CASE("Interleaved 1F1B takes (v·m + p − 1)(F + B) with free communication", "[strategy]") {
  // Per chunk F = 1, full backward 2: the bubble is (p − 1)(F + B) on every
  // stage, a fraction (p − 1)/(v·m + p − 1) (Narayanan et al. 2021 §2.2.2).
  // By hand, p = 2, v = 2, m = 4 (virtual stages: stage 0 runs 0 and 2):
  //   stage 1: F0.0 [1,2] F1.0 [2,3] F0.1 [3,4] B0.1 [4,6] F1.1 [6,7] B1.1 [7,9]
  //            F2.0 [9,10] B0.0 [10,12] F3.0 [12,13] B1.0 [13,15] F2.1 [15,16]
  //            B2.1 [16,18] F3.1 [18,19] B3.1 [19,21] B2.0 [21,23] B3.0 [23,25]
  //   stage 0: F0.0 [0,1] F1.0 [1,2] F0.1 [2,3] F1.1 [3,4] F2.0 [4,5] B0.1 [6,8]
  //            F3.0 [8,9] B1.1 [9,11] F2.1 [11,12] B0.0 [12,14] F3.1 [14,15]
  //            B1.0 [15,17] B2.1 [18,20] B3.1 [21,23] B2.0 [23,25] B3.0 [25,27]
  // so 27 = (4·2 + 1)·3, stage 0 idling at 5, 17 and 20.
  const auto hand = unit_timing(ScheduleKind::Interleaved, 2, 4, 2);
  REQUIRE(hand.error.empty());
  CHECK(hand.makespan == 27);
  std::vector<std::int64_t> stage0_starts;
  for (const auto& step : hand.steps[0]) stage0_starts.push_back(step.start);
  CHECK(stage0_starts ==
        std::vector<std::int64_t>{0, 1, 2, 3, 4, 6, 8, 9, 11, 12, 14, 15, 18, 21, 23, 25});
  for (std::int64_t p : {2, 3, 4, 8})
    for (std::int64_t v : {2, 3, 4})
      for (std::int64_t k : {1, 2, 4}) {
        const std::int64_t m = k * p;
        INFO("p = " << p << ", v = " << v << ", m = " << m);
        const auto t = unit_timing(ScheduleKind::Interleaved, p, m, v);
        REQUIRE(t.error.empty());
        CHECK(t.makespan == (m * v + p - 1) * 3);
        // bubble fraction (makespan − ideal)/makespan = (p − 1)/(v·m + p − 1)
        for (const auto idle : t.idle) CHECK(idle * (m * v + p - 1) == (p - 1) * t.makespan);
      }
}

TEST_CASE("ZB-H1 cuts 1F1B's bubble to (p - 1)(F + B - W)", "[strategy]") {
  // F = B = W = 1 (1F1B's full backward 2). 1F1B idles (p − 1)(F + B + W) =
  // 3(p − 1) on every stage; ZB-H1 (p − 1)(F + B − W) = p − 1, a third (Qi et
  // al. 2023 §3.1). By hand, p = 2, m = 2: stage 1 runs F0 Bi0 F1 Bi1 W0 W1 in
  // [1,7]; stage 0 F0 F1 [0,2], Bi0 W0 [3,5], Bi1 W1 [5,7]: 7 = 3m + 1, 1F1B 9.
  // p − 1 is also the least possible: the last stage starts at (p − 1)F.
  for (std::int64_t p : {2, 4, 8})
    for (std::int64_t m : {p, 2 * p, 2 * p + 1, 4 * p}) {
      INFO("p = " << p << ", m = " << m);
      const auto one_f = unit_timing(ScheduleKind::OneFOneB, p, m);
      const auto h1 = unit_timing(ScheduleKind::ZbH1, p, m);
      REQUIRE(one_f.error.empty());
      REQUIRE(h1.error.empty());
      for (const auto idle : one_f.idle) CHECK(idle == 3 * (p - 1));
      CHECK(h1.makespan - 3 * m == p - 1);
      for (const auto idle : h1.idle) CHECK(3 * idle == one_f.idle[0]);
    }
}

TEST_CASE("ZB-H1 holds 1F1B's peak in-flight micro-batches", "[strategy]") {
  // Qi et al.: ZB-H1's peak memory equals 1F1B's. A micro-batch holds its
  // activations from F until W on every stage: d_W + 1 = p of them, what 1F1B
  // holds on stage 0; until its B, p − s of them on stage s, as 1F1B.
  for (std::int64_t p : {1, 2, 4, 8})
    for (std::int64_t m : {1, 3, 8, 32})
      for (std::int64_t s = 0; s < p; ++s) {
        INFO("p = " << p << ", m = " << m << ", stage " << s);
        const auto h1 = make_pipeline_order(ScheduleKind::ZbH1, s, p, m);
        const auto one_f = make_pipeline_order(ScheduleKind::OneFOneB, s, p, m);
        const auto one_f_stage0 = make_pipeline_order(ScheduleKind::OneFOneB, 0, p, m);
        CHECK(max_in_flight(h1, Pass::BackwardWeight) == max_in_flight(one_f_stage0));
        CHECK(max_in_flight(h1) == max_in_flight(one_f));
        // ZB-H2 keeps 2(p − 1) + 1 until W: about twice.
        const auto h2 = make_pipeline_order(ScheduleKind::ZbH2, s, p, m);
        CHECK(max_in_flight(h2, Pass::BackwardWeight) == std::min(2 * p - 1, m));
      }
}

TEST_CASE("ZB-H2 never idles between a stage's first and last step", "[strategy]") {
  // F = B = W = 1, m ≥ 2p. Stage s starts at s·F (its first forward has s
  // stages upstream) and then runs its 3m steps back to back: the timeline is
  // a parallelogram and the makespan 3m + p − 1, the least possible (the last
  // stage starts at (p − 1)F). The paper calls this zero bubble: the p − 1 of
  // ramp overlaps the next iteration once the optimizer step is post-validated.
  for (std::int64_t p : {2, 4, 8})
    for (std::int64_t m : {2 * p, 3 * p, 4 * p}) {
      INFO("p = " << p << ", m = " << m);
      const auto t = unit_timing(ScheduleKind::ZbH2, p, m);
      REQUIRE(t.error.empty());
      CHECK(t.makespan == 3 * m + p - 1);
      for (std::int64_t s = 0; s < p; ++s) {
        const auto si = static_cast<std::size_t>(s);
        CHECK(t.first_start[si] == s);
        CHECK(t.last_end[si] - t.first_start[si] == 3 * m);
      }
    }
}

TEST_CASE("DualPipe order for 4 ranks and 8 micro-batches", "[strategy]") {
  // Derived by hand from dualpipe.py's step(), p = 4, m = 8, half = 4 (chunk 1
  // carries micro-batches 4 … 7), n = 2 half ranks.
  // Rank 0 (h = 0): 1 nF0 ×2: F0 F1; 2 nF0F1 ×1: F2 F4'; 3 nB1W1F1 ×1: Bi4'
  // W4' F5'; 4 main ×1: F3~B5' F6'~B0; 5 nB1F1B0 ×1: B6' F7'~B1; 6 nB1B0 ×1
  // (zero bubble from B0 at i = 0, h even): B7' Bi2; 7 nWB0 ×1: W2 Bi3; 8 nW: W3.
  CHECK(make_pipeline_order(ScheduleKind::DualPipe, 0, 4, 8, 2) ==
        std::vector<PipelineStep>{F(0), F(1), F(2), F(4, 1), Bi(4, 1), W(4, 1), F(5, 1),
                                  F(3, 0, true), B(5, 1), F(6, 1, true), B(0), B(6, 1),
                                  F(7, 1, true), B(1), B(7, 1), Bi(2), W(2), Bi(3), W(3)});
  // Rank 1, a middle rank (h = 1): no nF0; nF0F1 ×2: F0 F4' F1 F5'; main ×2,
  // its first F0 and B1 not overlapped: F2 B4' F6'~B0 F3~B5' F7'~B1; nB1B0 ×2
  // (zero bubble from B1 at i = 1, h odd): B6' B2 Bi7' Bi3; nW ×2: W7' W3.
  CHECK(make_pipeline_order(ScheduleKind::DualPipe, 1, 4, 8, 2) ==
        std::vector<PipelineStep>{F(0), F(4, 1), F(1), F(5, 1), F(2), B(4, 1), F(6, 1, true),
                                  B(0), F(3, 0, true), B(5, 1), F(7, 1, true), B(1), B(6, 1),
                                  B(2), Bi(7, 1), Bi(3), W(7, 1), W(3)});
  // Ranks p − 1 − r mirror ranks r with the directions swapped.
  for (std::int64_t p : {2, 4, 8})
    for (std::int64_t r = 0; r < p; ++r) {
      const std::int64_t m = 2 * p + 4, half = m / 2;
      auto mirrored = make_pipeline_order(ScheduleKind::DualPipe, p - 1 - r, p, m, 2);
      for (auto& step : mirrored) {
        step.microbatch += step.chunk == 0 ? half : -half;
        step.chunk = 1 - step.chunk;
      }
      CHECK(make_pipeline_order(ScheduleKind::DualPipe, r, p, m, 2) == mirrored);
    }
  CHECK_THROWS_AS(make_pipeline_order(ScheduleKind::DualPipe, 0, 4, 6, 2), ptsim::InternalError);
  CHECK_THROWS_AS(make_pipeline_order(ScheduleKind::DualPipe, 0, 3, 8, 2), ptsim::InternalError);
}

TEST_CASE("DualPipe's bubble is below 1F1B's and ZB-H1's", "[strategy]") {
  // F = B = W = 1 (full backward 2), overlapped pairs run back to back (F&B =
  // 3). Rank p/2 − 1's first forward has p/2 − 1 stages upstream, then it has
  // 3m of work: makespan ≥ 3m + p/2 − 1, and DualPipe reaches it. DeepSeek's
  // table gives (p/2 − 1)(F&B + B − 3W) = (p/2 − 1)·2 for these costs, 1F1B
  // 3(p − 1), ZB-H1 p − 1. DualPipe keeps p + 1 chunk-micro-batches in flight
  // (DeepSeek's table: activations PP + 1).
  for (std::int64_t p : {2, 4, 6, 8})
    for (std::int64_t m : {2 * p, 2 * p + 2, 4 * p, std::int64_t{20}}) {
      if (m < 2 * p) continue;
      INFO("p = " << p << ", m = " << m);
      const auto orders = all_orders(ScheduleKind::DualPipe, p, m, 2);
      const auto t = time_schedule(ScheduleKind::DualPipe, orders, StepCosts{1, 1, 1});
      REQUIRE(t.error.empty());
      const std::int64_t bubble = t.makespan - 3 * m;
      CHECK(bubble == p / 2 - 1);
      CHECK(bubble <= (p / 2 - 1) * 2);
      CHECK(bubble < 3 * (p - 1));
      CHECK(bubble < p - 1);
      for (const auto& order : orders) CHECK(max_in_flight(order, Pass::BackwardWeight) == p + 1);
    }
}

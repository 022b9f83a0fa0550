// Test helper: an abstract executor of pipeline schedules. It runs every
// stage's make_pipeline_order in order, with integer unit costs and free
// communication, to measure makespans, bubbles and idle time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ptsim/strategy/pipeline_schedule.hpp"

namespace ptsim::test {

/// Cost of one step on one model chunk, in abstract time units. A full
/// Backward costs backward_input + backward_weight.
struct StepCosts {
  std::int64_t forward = 1;
  std::int64_t backward_input = 1;   // B
  std::int64_t backward_weight = 1;  // W
};

struct StepInterval {
  std::int64_t start = 0;
  std::int64_t end = 0;
};

struct ScheduleTiming {
  std::string error;  // empty when every step ran; else the deadlock or duplicate found
  std::int64_t makespan = 0;
  std::vector<std::int64_t> busy;         // per stage: sum of its steps' costs
  std::vector<std::int64_t> idle;         // per stage: makespan − busy
  std::vector<std::int64_t> first_start;  // per stage: start of its first step
  std::vector<std::int64_t> last_end;     // per stage: end of its last step
  std::vector<std::vector<StepInterval>> steps;  // per stage, per step of its order
};

/// The orders of all stages 0 … p−1.
inline std::vector<std::vector<strategy::PipelineStep>> all_orders(strategy::ScheduleKind kind,
                                                                   std::int64_t p, std::int64_t m,
                                                                   std::int64_t chunks = 1) {
  std::vector<std::vector<strategy::PipelineStep>> orders;
  for (std::int64_t s = 0; s < p; ++s)
    orders.push_back(strategy::make_pipeline_order(kind, s, p, m, chunks));
  return orders;
}

/// Runs each stage's steps in order; a step starts when its stage is free and
/// its dependencies have ended, keyed by (micro-batch, virtual stage k):
///   Forward(mb, k)            after Forward(mb, k − 1);
///   Backward/BackwardInput    after Forward(mb, k) and the B part of (mb, k + 1)
///                             (the last virtual stage: its own forward only);
///   BackwardWeight(mb, k)     after the B part of (mb, k).
/// The last virtual stage is the largest k any step names. A forward marked
/// overlapped_with_next and the backward after it run one after the other
/// here: no overlap benefit, F&B = F + B.
inline ScheduleTiming time_schedule(strategy::ScheduleKind kind,
                                    const std::vector<std::vector<strategy::PipelineStep>>& orders,
                                    StepCosts costs) {
  using strategy::Pass;
  const auto p = static_cast<std::int64_t>(orders.size());
  using Key = std::tuple<std::int64_t, std::int64_t>;  // (micro-batch, virtual stage)
  std::map<Key, std::int64_t> forward_end, b_end, w_end;
  std::int64_t last_virtual = 0;
  for (std::int64_t s = 0; s < p; ++s)
    for (const auto& step : orders[static_cast<std::size_t>(s)])
      last_virtual = std::max(last_virtual, strategy::virtual_stage(kind, s, p, step.chunk));

  ScheduleTiming t;
  t.busy.assign(static_cast<std::size_t>(p), 0);
  t.first_start.assign(static_cast<std::size_t>(p), 0);
  t.last_end.assign(static_cast<std::size_t>(p), 0);
  t.steps.resize(static_cast<std::size_t>(p));
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<std::int64_t> free_at(static_cast<std::size_t>(p), 0);

  const auto lookup = [](const std::map<Key, std::int64_t>& done, const Key& key,
                         std::int64_t& ready) {
    const auto it = done.find(key);
    if (it == done.end()) return false;
    ready = std::max(ready, it->second);
    return true;
  };
  // Runs the next step of stage s if its dependencies have ended.
  const auto try_run = [&](std::int64_t s) {
    const auto si = static_cast<std::size_t>(s);
    const auto& step = orders[si][next[si]];
    const std::int64_t k = strategy::virtual_stage(kind, s, p, step.chunk);
    const Key key{step.microbatch, k};
    std::int64_t ready = free_at[si];
    std::int64_t cost = 0;
    std::map<Key, std::int64_t>* record = nullptr;
    switch (step.pass) {
      case Pass::Forward:
        if (k > 0 && !lookup(forward_end, {step.microbatch, k - 1}, ready)) return false;
        cost = costs.forward;
        record = &forward_end;
        break;
      case Pass::Backward:
      case Pass::BackwardInput:
        if (!lookup(forward_end, key, ready)) return false;
        if (k < last_virtual && !lookup(b_end, {step.microbatch, k + 1}, ready)) return false;
        cost = costs.backward_input +
               (step.pass == Pass::Backward ? costs.backward_weight : std::int64_t{0});
        record = &b_end;
        break;
      case Pass::BackwardWeight:
        if (!lookup(b_end, key, ready)) return false;
        cost = costs.backward_weight;
        record = &w_end;
        break;
    }
    if (record->count(key) != 0) {
      t.error += "stage " + std::to_string(s) + " repeats a step of micro-batch " +
                 std::to_string(step.microbatch) + "; ";
      return false;
    }
    (*record)[key] = ready + cost;
    if (step.pass == Pass::Backward) w_end[key] = ready + cost;
    if (next[si] == 0) t.first_start[si] = ready;
    t.steps[si].push_back({ready, ready + cost});
    t.busy[si] += cost;
    free_at[si] = t.last_end[si] = ready + cost;
    ++next[si];
    return true;
  };

  for (bool progress = true; progress;) {
    progress = false;
    for (std::int64_t s = 0; s < p; ++s)
      while (next[static_cast<std::size_t>(s)] < orders[static_cast<std::size_t>(s)].size() &&
             try_run(s))
        progress = true;
  }
  for (std::int64_t s = 0; s < p; ++s) {
    const auto si = static_cast<std::size_t>(s);
    if (next[si] < orders[si].size())
      t.error += "deadlock: stage " + std::to_string(s) + " waits at step " +
                 std::to_string(next[si]) + "; ";
    t.makespan = std::max(t.makespan, t.last_end[si]);
  }
  for (std::int64_t s = 0; s < p; ++s)
    t.idle.push_back(t.makespan - t.busy[static_cast<std::size_t>(s)]);
  return t;
}

}  // namespace ptsim::test

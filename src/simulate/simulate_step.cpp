// The composition root of one simulation (see simulate_step.hpp).
#include "ptsim/simulate/simulate_step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "ptsim/common/error.hpp"
#include "ptsim/cost/cost_model.hpp"
#include "ptsim/engine/simulator.hpp"
#include "ptsim/hardware/cluster.hpp"
#include "ptsim/report/summarize.hpp"

namespace ptsim::simulate {

namespace {

using strategy::Axis;

// One rank per pipeline stage: TP and DP coordinates zero.
std::vector<Rank> representatives(const strategy::RankLayout& layout) {
  std::vector<Rank> reps;
  for (std::int64_t s = 0; s < layout.size(Axis::Pp); ++s)
    reps.push_back(layout.with_coordinate(0, Axis::Pp, s));
  std::sort(reps.begin(), reps.end());
  return reps;
}

// Symmetric mode is exact only when every rank of a stage reaches each of its
// communicators over the same network tier as the stage's representative.
void check_symmetric(const taskgraph::Workload& w, const strategy::RankLayout& layout,
                     const hardware::Cluster& cluster) {
  const auto slots = static_cast<std::uint8_t>(w.comm_slot_names.size());
  for (Rank r = 0; r < w.world_size; ++r) {
    const Rank rep = layout.with_coordinate(
        layout.with_coordinate(r, Axis::Tp, 0), Axis::Dp, 0);
    for (std::uint8_t s = 0; s < slots; ++s) {
      const auto mine = w.communicator(r, s);
      const auto theirs = w.communicator(rep, s);
      if (mine == theirs) continue;
      if ((mine == taskgraph::kNoCommunicator) != (theirs == taskgraph::kNoCommunicator) ||
          cluster.tier_spanned(w.communicators[mine].members) !=
              cluster.tier_spanned(w.communicators[theirs].members))
        throw ConfigError(fmt::format(
            "--mode symmetric would not be exact: rank {} reaches its {} group over a different "
            "network tier than rank {} of the same stage; use --mode explicit",
            r, w.comm_slot_names[s], rep));
    }
  }
}

}  // namespace

std::vector<Rank> default_trace_ranks(const strategy::ParallelConfig& parallel) {
  const strategy::RankLayout layout(parallel.tp, parallel.dp, parallel.pp);
  if (parallel.world_size <= 16) {
    std::vector<Rank> all(static_cast<std::size_t>(parallel.world_size));
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<Rank>(i);
    return all;
  }
  return representatives(layout);
}

Outcome simulate_step(const Request& request) {
  const auto started = std::chrono::steady_clock::now();
  workload::StepWorkload step = workload::build_step_workload(request.model, request.parallel);
  const hardware::Cluster cluster(request.hardware, request.parallel.world_size);
  const cost::CostModel cost(cluster);

  engine::RunOptions options;
  options.record_ranks = request.record_ranks;
  if (request.mode == Mode::Symmetric) {
    check_symmetric(step.workload, step.layout, cluster);
    options.ranks = representatives(step.layout);
  }
  engine::RunResult run = engine::Simulator(step.workload, cost).run(options);
  report::StepResult result = report::summarize(run, step, request.parallel, request.hardware);
  result.simulation.mode = request.mode == Mode::Explicit ? "explicit" : "symmetric";
  result.simulation.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return {std::move(step), std::move(run), std::move(result)};
}

}  // namespace ptsim::simulate

// The composition root of one simulation (see simulate_step.hpp).
#include "ptsim/simulate/simulate_step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "ptsim/common/error.hpp"
#include "ptsim/cost/cost_model.hpp"
#include "ptsim/engine/simulator.hpp"
#include "ptsim/hardware/cluster.hpp"
#include "ptsim/report/summarize.hpp"
#include "ptsim/simulate/simulation_memory.hpp"
#include "ptsim/workload/step_workload.hpp"

namespace ptsim::simulate {

namespace {

using strategy::Axis;

// The ranks symmetric mode simulates: TP and DP coordinates zero, every
// pipeline stage, and CP coordinates 0 … period − 1 (ring attention pairs
// the CP ranks of a stage; where they repeat with a shorter period than
// the ring's, the ring is folded onto one period, fold_context_ring).
std::vector<Rank> representatives(const strategy::RankLayout& layout, std::int64_t period) {
  std::vector<Rank> reps;
  for (std::int64_t s = 0; s < layout.size(Axis::Pp); ++s)
    for (std::int64_t c = 0; c < period; ++c)
      reps.push_back(layout.with_coordinate(layout.with_coordinate(0, Axis::Pp, s), Axis::Cp, c));
  std::sort(reps.begin(), reps.end());
  return reps;
}

// What a communicator's cost depends on: its size and how its members spread
// over NVLink domains and pods. (Peers may cross one more switch level than
// their representative — 0.1–1 µs per network step — which symmetric mode
// does not tell apart.)
struct GroupShape {
  std::size_t members = 0;
  std::size_t domains = 0;
  std::size_t most_per_domain = 0;
  std::size_t pods = 0;
  friend bool operator==(const GroupShape&, const GroupShape&) = default;
};

GroupShape shape_of(const std::vector<Rank>& members, const hardware::Cluster& c) {
  // Domains and pods are rank ranges, so a sorted member list meets each in one run.
  std::vector<std::int64_t> domains, pods;
  domains.reserve(members.size());
  pods.reserve(members.size());
  for (const Rank r : members) {
    domains.push_back(c.domain_of(r));
    pods.push_back(c.pod_of(r));
  }
  std::sort(domains.begin(), domains.end());
  std::sort(pods.begin(), pods.end());
  GroupShape g{members.size(), 0, 0, 0};
  for (std::size_t i = 0; i < domains.size();) {
    std::size_t j = i;
    while (j < domains.size() && domains[j] == domains[i]) ++j;
    ++g.domains;
    g.most_per_domain = std::max(g.most_per_domain, j - i);
    i = j;
  }
  g.pods = static_cast<std::size_t>(std::unique(pods.begin(), pods.end()) - pods.begin());
  return g;
}

// Symmetric mode is exact when every rank of a stage reaches each of its
// communicators with the same shape as its representative: the rank with
// TP and DP coordinates zero and the CP coordinate taken modulo `period`
// (the ring's size: every CP rank is simulated). Returns the first rank for
// which this fails, as a message, or "".
std::string symmetric_mismatch(const taskgraph::Workload& w, const strategy::RankLayout& layout,
                               const hardware::Cluster& cluster, std::int64_t period) {
  const auto slots = static_cast<std::uint8_t>(w.comm_slot_names.size());
  std::vector<std::optional<GroupShape>> shapes(w.communicators.size());
  const auto shape = [&](taskgraph::CommunicatorId id) -> const GroupShape& {
    if (!shapes[id]) shapes[id] = shape_of(w.communicators[id].members, cluster);
    return *shapes[id];
  };
  for (Rank r = 0; r < w.world_size; ++r) {
    Rank rep = layout.with_coordinate(layout.with_coordinate(r, Axis::Tp, 0), Axis::Dp, 0);
    rep = layout.with_coordinate(rep, Axis::Cp, layout.coordinate(r, Axis::Cp) % period);
    for (std::uint8_t s = 0; s < slots; ++s) {
      const auto mine = w.communicator(r, s);
      const auto theirs = w.communicator(rep, s);
      if (mine == theirs) continue;
      if ((mine == taskgraph::kNoCommunicator) != (theirs == taskgraph::kNoCommunicator) ||
          !(shape(mine) == shape(theirs)))
        return fmt::format("rank {} reaches its {} group over a different part of the network than "
                           "rank {} of the same stage",
                           r, w.comm_slot_names[s], rep);
    }
  }
  return "";
}

// The shortest period, a proper divisor of the CP size, with which a
// stage's CP ranks repeat (symmetric_mismatch finds nothing), else the CP
// size. A ring that leaves its pod is not folded: its folded flows would
// carry the whole ring's weight on the stand-in's pod links, where each
// pod's links carry only their own ranks' hops.
std::int64_t ring_period(const taskgraph::Workload& w, const strategy::RankLayout& layout,
                         const hardware::Cluster& cluster) {
  const std::int64_t cp = layout.size(Axis::Cp);
  if (cluster.num_pods() > 1)
    for (std::int64_t s = 0; s < layout.size(Axis::Pp); ++s)
      for (std::int64_t c = 0; c < cp; ++c) {
        const Rank r = layout.with_coordinate(layout.with_coordinate(0, Axis::Pp, s), Axis::Cp, c);
        if (cluster.pod_of(r) != cluster.pod_of(layout.with_coordinate(r, Axis::Cp, (c + 1) % cp))) return cp;
      }
  for (std::int64_t g = 1; g < cp; ++g)
    if (cp % g == 0 && symmetric_mismatch(w, layout, cluster, g).empty()) return g;
  return cp;
}

// Folds each stage's CP ring onto its first `period` CP ranks: the last of
// them sends to a rank not simulated, whose receive the first posts instead
// (taskgraph::Communicator::receiver_stand_in). Exact when the ranks repeat
// with that period (ring_period): the first's predecessor then sends each
// block when the last does. MoE models only on one pod: an expert group may
// hold some of a stage's CP ranks and not others, and the weight its flows
// carry on pod links counts the simulated members (no other link is shared).
void fold_context_ring(taskgraph::Workload& w, const strategy::RankLayout& layout, std::int64_t period) {
  if (period == layout.size(Axis::Cp)) return;
  const std::size_t slots = w.comm_slot_names.size();
  for (std::int64_t s = 0; s < layout.size(Axis::Pp); ++s) {
    const Rank first = layout.with_coordinate(layout.with_coordinate(0, Axis::Pp, s), Axis::Cp, 0);
    const Rank last = layout.with_coordinate(first, Axis::Cp, period - 1);
    const taskgraph::CommunicatorId send =
        w.communicator_of[static_cast<std::size_t>(last) * slots + workload::slots::kContextSend];
    w.communicators[send].receiver_stand_in = first;
    w.communicator_of[static_cast<std::size_t>(first) * slots + workload::slots::kContextRecv] = send;
  }
}

}  // namespace

strategy::ParallelConfig on_hardware(strategy::ParallelConfig parallel, const hardware::HardwareProfile& hardware) {
  parallel.fp8_any_layout = hardware.gpu.fp8_gemm_any_layout();
  if (!parallel.host_overhead_given && hardware.host_overhead_s) parallel.host_overhead_s = *hardware.host_overhead_s;
  return parallel;
}

std::vector<Rank> default_trace_ranks(const strategy::ParallelConfig& parallel) {
  const strategy::RankLayout layout(parallel.tp, parallel.cp, 1, parallel.dp, parallel.pp, parallel.rank_order);
  if (parallel.world_size <= 16) {
    std::vector<Rank> all(static_cast<std::size_t>(parallel.world_size));
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<Rank>(i);
    return all;
  }
  return representatives(layout, layout.size(Axis::Cp));
}

namespace {

void apply(const std::vector<Degradation>& degradations, hardware::Cluster& cluster,
           engine::RunOptions& options) {
  using Kind = Degradation::Kind;
  for (const auto& d : degradations) {
    const bool pod = d.kind == Kind::Pod;
    const std::int64_t limit = pod ? cluster.num_pods() : cluster.world_size();
    if (d.index < 0 || d.index >= limit || (pod && cluster.num_pods() == 1))
      throw ConfigError(fmt::format("{} {} does not exist: this job has {} {}", pod ? "pod" : "rank",
                                    d.index, limit, pod ? "pod(s) (no pod links)" : "ranks"));
    if (!(d.factor >= 1 && d.factor <= 1e6))
      throw ConfigError(fmt::format("slowdown factor {} must lie in [1, 1e6]", d.factor));
    const auto rank = static_cast<Rank>(d.index);
    using hardware::LinkKind;
    switch (d.kind) {
      case Kind::Gpu: options.slow_gpus.emplace_back(rank, d.factor); break;
      case Kind::Nvlink:
        cluster.slow_down({cluster.gpu_link(rank, LinkKind::NvlinkOut), d.factor});
        cluster.slow_down({cluster.gpu_link(rank, LinkKind::NvlinkIn), d.factor});
        break;
      case Kind::Nic:
        cluster.slow_down({cluster.gpu_link(rank, LinkKind::NicOut), d.factor});
        cluster.slow_down({cluster.gpu_link(rank, LinkKind::NicIn), d.factor});
        break;
      case Kind::Pod:
        cluster.slow_down({cluster.pod_uplink(d.index), d.factor});
        cluster.slow_down({cluster.pod_downlink(d.index), d.factor});
        break;
    }
  }
}

}  // namespace

Outcome simulate_step(const Request& request) {
  const auto started = std::chrono::steady_clock::now();
  const strategy::ParallelConfig parallel = on_hardware(request.parallel, request.hardware);
  // Before anything is allocated for the job: the programs and every
  // simulated rank's state must fit (auto mode: as symmetric, until it is
  // known which mode runs).
  check_memory_fits(request.model, parallel, request.mode == Mode::Explicit);
  workload::StepWorkload step = workload::build_step_workload(request.model, parallel);
  hardware::Cluster cluster(request.hardware, parallel.world_size);
  engine::RunOptions options;
  options.record_ranks = request.record_ranks;
  apply(request.degradations, cluster, options);
  const cost::CostModel cost(cluster, cost::HostIssue{parallel.host_overhead_s});

  Mode mode = request.mode;
  if (mode == Mode::Symmetric && !request.degradations.empty())
    throw ConfigError("--mode symmetric cannot study stragglers or degraded links, which make one "
                      "rank unlike its peers; use --mode explicit (or auto)");
  // A CP ring whose ranks repeat with a shorter period (every hop over the
  // network, or every g-th) is folded onto one period: period/cp of the
  // ranks to simulate.
  std::string mismatch;
  std::int64_t period = parallel.cp;
  if (mode != Mode::Explicit && request.degradations.empty()) {
    if (!request.model.is_moe() || cluster.num_pods() == 1) period = ring_period(step.workload, step.layout, cluster);
    if (period == parallel.cp) mismatch = symmetric_mismatch(step.workload, step.layout, cluster, period);
  }
  if (mode == Mode::Symmetric && !mismatch.empty())
    throw ConfigError(fmt::format("--mode symmetric would not be exact: {}; use --mode explicit",
                                  mismatch));
  if (mode == Mode::Auto)
    mode = parallel.world_size > kAutoSymmetricAbove && request.degradations.empty() && mismatch.empty()
               ? Mode::Symmetric
               : Mode::Explicit;
  if (mode == Mode::Explicit && request.mode == Mode::Auto) check_memory_fits(request.model, parallel, true);
  if (mode == Mode::Symmetric) {
    options.ranks = representatives(step.layout, period);
    options.represents = static_cast<double>(parallel.tp * parallel.dp * (parallel.cp / period));
    fold_context_ring(step.workload, step.layout, period);
  }
  engine::RunResult run = engine::Simulator(step.workload, cost).run(options);
  report::StepResult result = report::summarize(run, step, parallel, request.hardware);
  result.simulation.mode = mode == Mode::Explicit ? "explicit" : "symmetric";
  result.simulation.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return {std::move(step), std::move(run), std::move(result)};
}

}  // namespace ptsim::simulate

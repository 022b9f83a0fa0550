// TransferPlans: each communicator's transfer plans, asked of the cost model
// once per (collective, size), and which of their phases can skip the flow
// network: a phase whose flows have their links to themselves — links no
// other communicator's plan uses, flows of the phase on distinct links, and a
// communicator whose operations run one at a time — takes the same time
// whenever it runs, known before the run starts. Private to engine/.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "internal/compiled_program.hpp"
#include "internal/flow_network.hpp"
#include "ptsim/cost/cost_model.hpp"
#include "ptsim/cost/transfer_plan.hpp"
#include "ptsim/taskgraph/workload.hpp"

namespace ptsim::engine::internal {

/// What a plan depends on besides its communicator: the collective and its
/// size, and for an expert exchange the routing, library and direction its
/// shape holds (a dispatch and a combine of the same bytes move at their own
/// measured rates).
struct PlanKey {
  taskgraph::CollectiveKind collective{};
  std::uint64_t bytes = 0;
  std::array<std::uint32_t, 4> routing{};

  static PlanKey of(const taskgraph::Task& task) {
    PlanKey k{task.collective, task.bytes, {}};
    if (task.collective == taskgraph::CollectiveKind::ExpertDispatch) k.routing = task.shape;
    return k;
  }
  bool operator==(const PlanKey&) const = default;
  auto operator<=>(const PlanKey&) const = default;
};

struct PlannedTransfer {
  PlanKey key;
  std::unique_ptr<cost::TransferPlan> plan;
  /// The factor by which the transfer slows the kernels of each member while
  /// it runs (cost::CostModel::compute_slowdown_beside).
  double compute_slowdown = 1;
  /// Per phase: the time its flows take when no other flow can share their
  /// links (the slowest flow at its rate alone); empty when other traffic
  /// may meet them and the flow network must run them.
  std::vector<std::optional<Time>> alone;
  /// Per phase: when it and every phase after it run alone, the time from its
  /// start to the transfer's end (their alone times and latencies); else empty.
  std::vector<std::optional<Time>> rest_alone;
};

/// A simulated rank as the plan cache sees it: its global rank and program.
struct SimulatedProgram {
  Rank rank = 0;
  const CompiledProgram* program = nullptr;
};

class TransferPlans {
 public:
  /// `weights[c]`: the weight of communicator c's flows on shared links.
  TransferPlans(const taskgraph::Workload& w, const cost::CostModel& cost, const FlowNetwork& network,
                std::vector<double> weights);

  /// The weight of communicator `id`'s flows on shared links.
  double weight(taskgraph::CommunicatorId id) const { return weights_[id]; }

  /// Finds in advance every plan the simulated ranks will ask for and marks
  /// the phases that run alone. Plans asked for later (none, unless a task
  /// was missed) are priced on the flow network.
  void plan_ahead(const std::vector<SimulatedProgram>& ranks);

  /// The plan of `task` on communicator `id` (a short scan: a communicator
  /// sees only a few distinct collectives and sizes).
  const PlannedTransfer& get(taskgraph::CommunicatorId id, const taskgraph::Task& task) {
    const PlanKey key = PlanKey::of(task);
    for (const PlannedTransfer& p : by_comm_[id])
      if (p.key == key) return p;
    return add(id, task);
  }

 private:
  PlannedTransfer& add(taskgraph::CommunicatorId id, const taskgraph::Task& task);

  const taskgraph::Workload& w_;
  const cost::CostModel& cost_;
  const FlowNetwork& network_;
  std::vector<double> weights_;
  std::vector<std::vector<PlannedTransfer>> by_comm_;
};

}  // namespace ptsim::engine::internal

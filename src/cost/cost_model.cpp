// CostModel: task → duration on this cluster (see cost_model.hpp).
#include "ptsim/cost/cost_model.hpp"

#include "ptsim/cost/collective_cost.hpp"
#include "ptsim/cost/compute_cost.hpp"

namespace ptsim::cost {

Time CostModel::compute_duration(const taskgraph::Task& task) const {
  return compute_time(cluster_->profile().gpu, task);
}

Time CostModel::communication_duration(const taskgraph::Task& task,
                                       const taskgraph::Communicator& communicator) const {
  const auto& profile = cluster_->profile();
  const auto& tier = profile.tiers[cluster_->tier_spanned(communicator.members)];
  const auto n = static_cast<std::int64_t>(communicator.members.size());
  return Time::from_seconds(
      collective_seconds(task.collective, task.bytes, n, tier, profile.collective_base_latency_s));
}

}  // namespace ptsim::cost

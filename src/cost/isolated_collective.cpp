// A collective alone on a cluster (see isolated_collective.hpp).
#include "ptsim/cost/isolated_collective.hpp"

#include <utility>
#include <vector>

#include "ptsim/cost/collective_algorithms.hpp"
#include "ptsim/cost/nccl_latency.hpp"
#include "ptsim/hardware/cluster.hpp"

namespace ptsim::cost {

std::optional<TransferPlan> isolated_collective(const hardware::HardwareProfile& hw, taskgraph::CollectiveKind kind,
                                                std::int64_t ranks, std::uint64_t bytes,
                                                std::optional<Algorithm> only) {
  const hardware::Cluster cluster(hw, ranks);
  const bool pair = kind == taskgraph::CollectiveKind::PointToPoint;
  std::vector<Rank> members(static_cast<std::size_t>(pair ? 2 : ranks));
  for (std::size_t i = 0; i < members.size(); ++i) members[i] = static_cast<Rank>(i);
  if (pair) members[1] = static_cast<Rank>(ranks - 1);
  if (!only) return choose_plan(kind, bytes, members, cluster, LatencyModel(hw));
  std::optional<TransferPlan> best;
  for (auto& plan : candidate_plans(kind, bytes, members, cluster, LatencyModel(hw)))
    if (plan.algorithm == *only && (!best || plan.estimated_s < best->estimated_s)) best = std::move(plan);
  return best;
}

double bus_bandwidth_factor(taskgraph::CollectiveKind kind, double ranks) {
  using K = taskgraph::CollectiveKind;
  if (kind == K::AllReduce) return 2 * (ranks - 1) / ranks;
  if (kind == K::AllGather || kind == K::ReduceScatter || kind == K::AllToAll) return (ranks - 1) / ranks;
  return 1;
}

}  // namespace ptsim::cost

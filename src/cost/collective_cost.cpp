// Ring α–β collective times (see collective_cost.hpp).
#include "ptsim/cost/collective_cost.hpp"

#include "ptsim/common/error.hpp"

namespace ptsim::cost {

double collective_seconds(taskgraph::CollectiveKind kind, std::uint64_t bytes,
                          std::int64_t num_ranks, const hardware::NetworkTier& tier,
                          double call_latency_s) {
  using taskgraph::CollectiveKind;
  PTSIM_ASSERT(num_ranks >= 1, "a collective has at least one rank");
  if (num_ranks == 1) return 0;
  const double n = static_cast<double>(num_ranks);
  const double s_over_b =
      static_cast<double>(bytes) / (tier.bandwidth_bytes_per_s * tier.efficiency);
  const double alpha = tier.latency_s;
  double t = 0;
  switch (kind) {
    case CollectiveKind::AllReduce: t = 2 * (n - 1) * alpha + 2 * (n - 1) / n * s_over_b; break;
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter: t = (n - 1) * alpha + (n - 1) / n * s_over_b; break;
    case CollectiveKind::Broadcast: t = (n - 1) * alpha + s_over_b; break;
    case CollectiveKind::PointToPoint: t = alpha + s_over_b; break;
    case CollectiveKind::None: PTSIM_ASSERT(false, "communication task without a collective kind");
  }
  return t + call_latency_s;
}

}  // namespace ptsim::cost

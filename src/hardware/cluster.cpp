// Rank placement and the tier a group of ranks spans.
#include "ptsim/hardware/cluster.hpp"

#include "ptsim/common/error.hpp"

namespace ptsim::hardware {

Cluster::Cluster(const HardwareProfile& profile, std::int64_t world_size)
    : profile_(&profile), world_size_(world_size) {
  PTSIM_ASSERT(!profile.tiers.empty(), "a hardware profile needs at least one network tier");
  PTSIM_ASSERT(profile.gpus_per_node > 0, "gpus_per_node must be positive");
}

std::int64_t Cluster::num_nodes() const {
  return (world_size_ + profile_->gpus_per_node - 1) / profile_->gpus_per_node;
}

std::size_t Cluster::tier_spanned(std::span<const Rank> members) const {
  PTSIM_ASSERT(!members.empty(), "a group has at least one member");
  const auto& tiers = profile_->tiers;
  for (std::size_t t = 0; t + 1 < tiers.size(); ++t) {
    const std::int64_t domain = tiers[t].domain_gpus;
    const std::int64_t first = members.front() / domain;
    bool inside = true;
    for (const Rank r : members) inside = inside && (r / domain == first);
    if (inside) return t;
  }
  return tiers.size() - 1;
}

}  // namespace ptsim::hardware

// Cluster: where each rank sits — its node and, for a group of ranks, the
// innermost network tier that connects all of them. Ranks fill nodes in order
// (rank r lives on node r / gpus_per_node), as launchers place them.
#pragma once

#include <cstdint>
#include <span>

#include "ptsim/common/ids.hpp"
#include "ptsim/hardware/hardware_profile.hpp"

namespace ptsim::hardware {

class Cluster {
 public:
  /// The profile's tiers must nest (each domain size divides the next).
  Cluster(const HardwareProfile& profile, std::int64_t world_size);

  const HardwareProfile& profile() const { return *profile_; }
  std::int64_t world_size() const { return world_size_; }
  std::int64_t num_nodes() const;
  std::int64_t node_of(Rank rank) const { return rank / profile_->gpus_per_node; }

  /// Index into profile().tiers of the innermost tier one of whose domains
  /// holds every member; members must be non-empty.
  std::size_t tier_spanned(std::span<const Rank> members) const;

 private:
  const HardwareProfile* profile_;
  std::int64_t world_size_;
};

}  // namespace ptsim::hardware

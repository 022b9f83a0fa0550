// The links transfers cross, as the engine sees them: an id, a capacity in
// bytes/s and whether many ranks' flows share it (the fabric's links past
// the GPUs' own). A view of the hardware's cluster, so that the engine reads
// link figures through cost/, the only place hardware becomes rates.
#pragma once

#include <cstddef>

#include "ptsim/hardware/cluster.hpp"

namespace ptsim::cost {

using LinkId = hardware::LinkId;

class Links {
 public:
  /// `cluster` must outlive the view.
  explicit Links(const hardware::Cluster& cluster) : cluster_(&cluster) {}
  double capacity(LinkId link) const { return cluster_->capacity(link); }
  bool is_shared(LinkId link) const { return cluster_->is_shared(link); }
  std::size_t count() const { return cluster_->num_links(); }

 private:
  const hardware::Cluster* cluster_;
};

}  // namespace ptsim::cost

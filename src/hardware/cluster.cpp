// Rank placement, links and paths (see cluster.hpp).
#include "ptsim/hardware/cluster.hpp"

#include <fmt/format.h>

#include "ptsim/common/error.hpp"

namespace ptsim::hardware {

Cluster::Cluster(const HardwareProfile& profile, std::int64_t world_size)
    : profile_(&profile), world_size_(world_size) {
  PTSIM_ASSERT(profile.gpus_per_node > 0, "gpus_per_node must be positive");
  PTSIM_ASSERT(profile.nvlink.domain_gpus > 0, "NVLink domains hold at least one GPU");
  if (profile.fabric.pod_gpus > 0)
    num_pods_ = (world_size + profile.fabric.pod_gpus - 1) / profile.fabric.pod_gpus;
  domain_gpus_ = profile.nvlink.domain_gpus;
  const std::int64_t domain_nodes = profile.nvlink.domain_gpus / profile.gpus_per_node;
  const std::int64_t nodes = num_nodes();
  if (domain_nodes > 1 && nodes > domain_nodes) {
    std::int64_t segment = domain_nodes;
    while (nodes % segment != 0) --segment;
    domain_gpus_ = segment * profile.gpus_per_node;
  }
  const double nvlink = profile.nvlink.bandwidth_bytes_per_s * profile.nvlink.efficiency;
  const double nic = profile.nic.gpu_bandwidth_bytes_per_s() * profile.nic.efficiency;
  capacity_.reserve(static_cast<std::size_t>(4 * world_size + 2 * (num_pods_ > 1 ? num_pods_ : 0)));
  for (std::int64_t r = 0; r < world_size; ++r)
    capacity_.insert(capacity_.end(), {nvlink, nvlink, nic, nic});
  if (num_pods_ > 1) {
    // A pod's uplinks carry, at most, what its NICs send, divided by the
    // oversubscription of the layer above it.
    const double uplink =
        static_cast<double>(profile.fabric.pod_gpus) * nic / profile.fabric.oversubscription;
    for (std::int64_t p = 0; p < num_pods_; ++p) capacity_.insert(capacity_.end(), {uplink, uplink});
  }
}

std::int64_t Cluster::num_nodes() const {
  return (world_size_ + profile_->gpus_per_node - 1) / profile_->gpus_per_node;
}

LinkId Cluster::pod_uplink(std::int64_t pod) const {
  PTSIM_ASSERT(num_pods_ > 1 && pod >= 0 && pod < num_pods_, "pod links exist between pods");
  return static_cast<LinkId>(4 * world_size_ + 2 * pod);
}

std::string Cluster::link_name(LinkId link) const {
  if (!is_shared(link)) {
    static constexpr const char* kKinds[] = {"NVLink out", "NVLink in", "NIC out", "NIC in"};
    return fmt::format("rank {} {}", link / 4, kKinds[link % 4]);
  }
  const LinkId offset = link - 4 * static_cast<LinkId>(world_size_);
  return fmt::format("pod {} {}", offset / 2, offset % 2 == 0 ? "uplink" : "downlink");
}

Path Cluster::path(Rank src, Rank dst) const {
  PTSIM_ASSERT(src != dst, "a transfer has two distinct ends");
  Path p;
  if (domain_of(src) == domain_of(dst)) {
    p.links[p.num_links++] = gpu_link(src, LinkKind::NvlinkOut);
    p.links[p.num_links++] = gpu_link(dst, LinkKind::NvlinkIn);
    return p;
  }
  p.over_nvlink = false;
  p.links[p.num_links++] = gpu_link(src, LinkKind::NicOut);
  const std::int64_t src_pod = pod_of(src), dst_pod = pod_of(dst);
  if (src_pod != dst_pod) {
    p.links[p.num_links++] = pod_uplink(src_pod);
    p.links[p.num_links++] = pod_downlink(dst_pod);
  }
  p.links[p.num_links++] = gpu_link(dst, LinkKind::NicIn);
  // Switches on the way: one leaf when both NICs hang off the same leaf
  // (rail-optimized: same rail too), leaf-spine-leaf inside a pod, and
  // through the core between pods.
  const auto& f = profile_->fabric;
  const bool same_leaf = node_of(src) / f.leaf_nodes == node_of(dst) / f.leaf_nodes &&
                         (f.topology == FabricTopology::FatTree || rail_of(src) == rail_of(dst));
  p.switches = src_pod != dst_pod ? 5 : same_leaf ? 1 : 3;
  return p;
}

Path Cluster::folded_path(Rank src, Rank dst, Rank stand_in) const {
  Path p = path(src, dst);
  for (std::uint8_t i = 0; i < p.num_links; ++i) {
    LinkId& l = p.links[i];
    if (l == gpu_link(dst, LinkKind::NvlinkIn)) l = gpu_link(stand_in, LinkKind::NvlinkIn);
    if (l == gpu_link(dst, LinkKind::NicIn)) l = gpu_link(stand_in, LinkKind::NicIn);
    if (num_pods_ > 1 && l == pod_downlink(pod_of(dst))) l = pod_downlink(pod_of(stand_in));
  }
  return p;
}

void Cluster::slow_down(const LinkSlowdown& slowdown) {
  PTSIM_ASSERT(slowdown.link < capacity_.size(), "slowed link exists");
  PTSIM_ASSERT(slowdown.factor >= 1, "a slowdown factor is at least 1");
  capacity_[slowdown.link] /= slowdown.factor;
}

}  // namespace ptsim::hardware

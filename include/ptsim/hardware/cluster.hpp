// Cluster: the hardware instantiated for a job of `world_size` ranks — where
// each rank sits (node, NVLink domain, rail, pod) and the links a transfer
// crosses. Ranks fill nodes in order (rank r lives on node r / gpus_per_node).
// Where an NVLink domain spans nodes (GB200/GB300 NVL72 racks of 18 trays),
// the job takes the same number of nodes from each domain it uses, the
// largest divisor of its node count that a domain holds: Megatron-Bridge's
// launcher asks Slurm for that --segment (scripts/performance/utils/
// executors.py at 067f987df: for 4-GPU nodes, the largest divisor of the
// nodes up to 18), so 64 nodes run as 4 domains of 16 trays, 64 GPUs each.
//
// Links, each one direction of one resource shared by the transfers that
// cross it at the same time:
//   per GPU   NVLink out, NVLink in (to and from the NVSwitch domain),
//             NIC out, NIC in (all the GPU's NICs together)
//   per pod   uplink, downlink (to and from the rest of the fabric; only when
//             the cluster spans more than one pod)
// A transfer inside an NVLink domain crosses the sender's NVLink out and the
// receiver's NVLink in; otherwise the sender's NIC out, the pods' uplink and
// downlink if it leaves its pod, and the receiver's NIC in.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ptsim/common/ids.hpp"
#include "ptsim/hardware/hardware_profile.hpp"

namespace ptsim::hardware {

using LinkId = std::uint32_t;

enum class LinkKind : std::uint8_t { NvlinkOut, NvlinkIn, NicOut, NicIn };

struct Path {
  std::array<LinkId, 4> links{};
  std::uint8_t num_links = 0;
  int switches = 0;        // fabric switches crossed (0 inside an NVLink domain)
  bool over_nvlink = true;
  std::span<const LinkId> view() const { return {links.data(), num_links}; }
};

/// A degraded link or GPU for what-if studies.
struct LinkSlowdown {
  LinkId link = 0;
  double factor = 1;  // capacity divided by this
};

class Cluster {
 public:
  /// Keeps a reference to `profile`, which must outlive the cluster.
  Cluster(const HardwareProfile& profile, std::int64_t world_size);
  Cluster(HardwareProfile&&, std::int64_t) = delete;  // a temporary profile would dangle

  const HardwareProfile& profile() const { return *profile_; }
  std::int64_t world_size() const { return world_size_; }
  std::int64_t num_nodes() const;
  std::int64_t num_pods() const { return num_pods_; }
  std::int64_t node_of(Rank r) const { return r / profile_->gpus_per_node; }
  std::int64_t domain_of(Rank r) const { return r / domain_gpus_; }
  /// GPUs of this job in each NVLink domain it uses (see the header).
  std::int64_t job_domain_gpus() const { return domain_gpus_; }
  std::int64_t rail_of(Rank r) const { return r % profile_->gpus_per_node; }
  std::int64_t pod_of(Rank r) const { return num_pods_ == 1 ? 0 : r / profile_->fabric.pod_gpus; }

  std::size_t num_links() const { return capacity_.size(); }
  LinkId gpu_link(Rank r, LinkKind kind) const {
    return static_cast<LinkId>(r) * 4 + static_cast<LinkId>(kind);
  }
  LinkId pod_uplink(std::int64_t pod) const;
  LinkId pod_downlink(std::int64_t pod) const { return pod_uplink(pod) + 1; }
  /// Achieved capacity of a link in bytes/s (line rate · NCCL efficiency,
  /// divided by any slowdown applied).
  double capacity(LinkId link) const { return capacity_[link]; }
  /// Pod links carry many ranks' traffic; GPU links one rank's.
  bool is_shared(LinkId link) const { return link >= 4 * static_cast<LinkId>(world_size_); }
  std::string link_name(LinkId link) const;

  /// The links a transfer from `src` to `dst` (src ≠ dst) crosses.
  Path path(Rank src, Rank dst) const;
  /// path(src, dst) with the receiver's links into it (NVLink in, NIC in,
  /// its pod's downlink) replaced by those of `stand_in`, a rank that runs
  /// as the receiver does (taskgraph::Communicator::receiver_stand_in).
  Path folded_path(Rank src, Rank dst, Rank stand_in) const;

  /// Divides a link's capacity by `factor` (a degraded NIC, a slow uplink).
  void slow_down(const LinkSlowdown& slowdown);

 private:
  const HardwareProfile* profile_;
  std::int64_t world_size_;
  std::int64_t domain_gpus_ = 1;
  std::int64_t num_pods_ = 1;
  std::vector<double> capacity_;
};

}  // namespace ptsim::hardware

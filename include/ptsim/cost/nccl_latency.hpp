// NCCL's latency model, as NCCL itself tunes its algorithm choice
// (src/graph/tuning.cc): a base latency per call for each (algorithm,
// protocol) and a latency per algorithm step for each (link type, algorithm,
// protocol). ptsim keeps NCCL's relative values and anchors them on the
// profile's Ring/Simple figures (collective_base_latency_us and the NVLink and
// NIC latency_us), so a profile measured on its own system scales them all.
// An NVLS operation's NVLink cost is the profile's nvls_latency_us where it
// is measured (NVLS and NVLSTree alike), else NCCL's 25 µs scaled so.
#pragma once

#include "ptsim/cost/transfer_plan.hpp"
#include "ptsim/hardware/hardware_profile.hpp"

namespace ptsim::cost {

class LatencyModel {
 public:
  explicit LatencyModel(const hardware::HardwareProfile& hw);
  /// Fixed cost of one call, in seconds.
  double base(Algorithm a, Protocol p) const;
  /// Cost of one algorithm step over NVLink or over the network, in seconds.
  double step(bool over_nvlink, Algorithm a, Protocol p) const;

 private:
  double base_scale_;
  double nvlink_scale_;
  double network_scale_;
  double nvls_step_s_;
};

/// Link bytes per payload byte of an algorithm and protocol, as NCCL scales
/// its bandwidth: LL sends 4 bytes of flag with every 4 of data, LL128 runs
/// at 0.92 of the link, NCCL's tree at 0.92 of the ring.
double wire_factor(Algorithm a, Protocol p);

/// NCCL's correction of a tree all-reduce's bandwidth for a message of
/// `bytes` under protocol `p` (treeCorrectionFactor, tuning.cc): the fraction
/// of the modelled bandwidth the tree reaches, 0.4 to 1.
double tree_correction(Protocol p, double bytes);

}  // namespace ptsim::cost

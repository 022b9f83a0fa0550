// NCCL's latency tables (see nccl_latency.hpp).
//
// Values from NVIDIA/nccl v2.30.7-1 src/graph/tuning.cc lines 150–175
// (baseLatencies and hwLatencies, microseconds; columns LL, LL128, Simple);
// docs/nccl-model-constants.md has the excerpts and how they changed since
// v2.18. Ring NVLink (0.6/1.9/3.4) and NET (2.7/4.0/14.0) rows are the same
// in every version read.
#include "ptsim/cost/nccl_latency.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace ptsim::cost {

namespace {

using Row = std::array<double, 3>;  // LL, LL128, Simple

// Indexed by Algorithm: Ring, Tree, Nvls, Hierarchical, CollNet, Direct,
// NvlsTree.
// Hierarchical is ring phases, Direct (all-to-all, send/recv) NCCL's p2p path,
// both costed with the Ring row as NCCL's p2p has no row of its own.
constexpr std::array<Row, 7> kBase = {{
    {6.6, 14.0, 8.4},  // Ring
    {6.8, 14.0, 8.4},  // Tree
    {0.0, 0.0, 0.0},   // NVLS: its cost is the NVLink "step" below
    {6.6, 14.0, 8.4},  // Hierarchical (ring phases)
    {0.0, 0.0, 0.0},   // CollNet (Direct)
    {6.6, 14.0, 8.4},  // Direct
    {0.0, 0.0, 0.0},   // NVLSTree: intra + 2·log2(D)·inter steps, no base
}};
constexpr std::array<Row, 7> kNvlinkStep = {{
    {0.6, 1.9, 3.4},   // Ring
    {0.6, 1.25, 4.0},  // Tree
    {0.0, 0.0, 25.0},  // NVLS
    {0.6, 1.9, 3.4},   // Hierarchical
    {0.0, 0.0, 3.7},   // CollNet (Direct)
    {0.6, 1.9, 3.4},   // Direct
    {0.0, 0.0, 25.0},  // NVLSTree
}};
constexpr std::array<Row, 7> kNetworkStep = {{
    {2.7, 4.0, 14.0},  // Ring
    {5.0, 8.5, 14.0},  // Tree
    {0.0, 0.0, 18.0},  // NVLS
    {2.7, 4.0, 14.0},  // Hierarchical
    {0.0, 0.0, 31.0},  // CollNet (Direct)
    {2.7, 4.0, 14.0},  // Direct
    {0.0, 0.0, 20.9},  // NVLSTree
}};

constexpr std::size_t idx(Algorithm a) { return static_cast<std::size_t>(a); }
constexpr std::size_t idx(Protocol p) { return static_cast<std::size_t>(p); }

// Ring/Simple, the anchor the profile's figures give.
constexpr double kRingSimpleBase = kBase[0][2];
constexpr double kRingSimpleNvlink = kNvlinkStep[0][2];
constexpr double kRingSimpleNetwork = kNetworkStep[0][2];

}  // namespace

LatencyModel::LatencyModel(const hardware::HardwareProfile& hw)
    : base_scale_(hw.collective_base_latency_s / (kRingSimpleBase * 1e-6)),
      nvlink_scale_(hw.nvlink.latency_s / (kRingSimpleNvlink * 1e-6)),
      network_scale_(hw.nic.latency_s / (kRingSimpleNetwork * 1e-6)),
      nvls_step_s_(hw.nvlink.nvls_latency_s.value_or(kNvlinkStep[idx(Algorithm::Nvls)][idx(Protocol::Simple)] * 1e-6 *
                                                     nvlink_scale_)) {}

double LatencyModel::base(Algorithm a, Protocol p) const {
  return kBase[idx(a)][idx(p)] * 1e-6 * base_scale_;
}

double LatencyModel::step(bool over_nvlink, Algorithm a, Protocol p) const {
  if (over_nvlink && (a == Algorithm::Nvls || a == Algorithm::NvlsTree) && p == Protocol::Simple) return nvls_step_s_;
  return over_nvlink ? kNvlinkStep[idx(a)][idx(p)] * 1e-6 * nvlink_scale_
                     : kNetworkStep[idx(a)][idx(p)] * 1e-6 * network_scale_;
}

// tuning.cc lines 327–339: ring LL at half the bus bandwidth (4 flag bytes
// with every 4 of data), LL128 at 0.92; tree all-reduce at 0.92, LL a further
// 1/3.8, LL128 a further 120/128. NCCL's per-channel caps are not modelled.
double wire_factor(Algorithm a, Protocol p) {
  const bool tree = a == Algorithm::Tree;
  switch (p) {
    case Protocol::LL: return tree ? 3.8 / 0.92 : 2.0;
    case Protocol::LL128: return tree ? 128.0 / 120.0 / 0.92 : 1 / 0.92;
    case Protocol::Simple: return tree ? 1 / 0.92 : 1.0;
  }
  return 1.0;
}

// NCCL's treeCorrectionFactor (v2.30.7-1 src/graph/tuning.cc, lines 623–642):
// its tuner scales a tree all-reduce's bandwidth by a factor per protocol
// and log2(bytes / 64), 0 to 22, that dips to 0.4–0.6 for messages of
// 64 KiB to 4 MiB; NVIDIA's own correction of the tree's bandwidth model
// to what it measured. NCCL's x86 sm100 NVLSTree correction is not applied
// (the profiles do not say their hosts' CPU architecture).
double tree_correction(Protocol p, double bytes) {
  // clang-format off
  static constexpr double kFactor[3][23] = {
    { 1.0, 1.0, 1.0, 1.0,  .9,  .8,  .7,  .7,  .7,  .7,  .6,  .5,  .4,  .4,  .5,  .6,  .7,  .8,  .9, 1.0, 1.0, 1.0, 1.0 },
    { 1.0, 1.0, 1.0, 1.0, 1.0,  .9,  .8,  .8,  .8,  .7,  .6,  .6,  .6,  .6,  .6,  .6,  .8,  .9,  .9,  .9,  .9, 1.0, 1.0 },
    {  .9,  .9,  .9,  .9,  .9,  .9,  .9,  .8,  .7,  .6,  .6,  .5,  .5,  .5,  .5,  .6,  .7,  .8,  .7,  .7,  .8,  .9,  .9 },
  };
  // clang-format on
  const auto units = static_cast<std::uint64_t>(std::max(bytes, 0.0)) >> 6;  // nBytes >> 6
  if (units == 0) return 1.0;                                                // NCCL's log2i(0) is negative
  const int log_size = static_cast<int>(std::bit_width(units)) - 1;          // log2i: floor of log2
  if (log_size >= 23) return 1.0;
  return kFactor[idx(p)][log_size];
}

}  // namespace ptsim::cost

// Collective cost: α–β time of NCCL's ring algorithm on one network tier.
// With S the message size in nccl-tests' convention (the all-reduce buffer,
// the all-gather output, the reduce-scatter input), n ranks, α the tier's
// per-step latency and B its achieved bandwidth (line rate · efficiency):
//   all-reduce                    2(n−1)·α + 2(n−1)/n · S/B
//   all-gather, reduce-scatter     (n−1)·α +  (n−1)/n · S/B
//   broadcast (pipelined ring)     (n−1)·α +           S/B
//   point-to-point                       α +           S/B
// plus the fixed cost of one collective call (NCCL's base latency); n = 1 costs nothing.
// Pure function; one of the two places where hardware numbers become seconds.
#pragma once

#include <cstdint>

#include "ptsim/common/time.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/taskgraph/task.hpp"

namespace ptsim::cost {

double collective_seconds(taskgraph::CollectiveKind kind, std::uint64_t bytes,
                          std::int64_t num_ranks, const hardware::NetworkTier& tier,
                          double call_latency_s);

}  // namespace ptsim::cost

// One collective alone on a cluster, as nccl-tests runs it: on ranks 0 … n−1
// filling nodes in order (send/recv between the first and the last), the
// plan NCCL would pick, and nccl-tests' bandwidth conventions (busbw =
// algbw · 2(n−1)/n for all-reduce; · (n−1)/n for all-gather, reduce-scatter
// and all-to-all; = algbw for broadcast, reduce and send/recv).
#pragma once

#include <cstdint>
#include <optional>

#include "ptsim/cost/transfer_plan.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/taskgraph/task.hpp"

namespace ptsim::cost {

/// The plan and its estimated time for `bytes` (nccl-tests' size) over n
/// ranks; with `only`, the best plan of that algorithm, as NCCL_ALGO forces
/// it (nullopt where the algorithm does not apply to the collective there).
std::optional<TransferPlan> isolated_collective(const hardware::HardwareProfile& hw, taskgraph::CollectiveKind kind,
                                                std::int64_t ranks, std::uint64_t bytes,
                                                std::optional<Algorithm> only = std::nullopt);

/// busbw / algbw for the collective over n ranks.
double bus_bandwidth_factor(taskgraph::CollectiveKind kind, double ranks);

}  // namespace ptsim::cost

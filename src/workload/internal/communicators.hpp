// The communicators of a step — TP, CP ring, DP (dense gradients over
// dp·cp ranks), expert groups, the tied-embedding group, FP8's amax group and
// the pipeline channels — and each rank's slot table. Private to workload/.
#pragma once

#include "ptsim/strategy/parallel_config.hpp"
#include "ptsim/strategy/rank_layout.hpp"
#include "ptsim/taskgraph/workload.hpp"

namespace ptsim::workload::internal {

/// Fills w.communicators and w.communicator_of (w.comm_slot_names must be set).
/// `dense` lays ranks out as (tp, cp, dp, pp); `expert` (MoE models only) as
/// (expert_tp, ep, expert_dp, pp) over the same ranks.
void add_communicators(const strategy::ParallelConfig& config, const strategy::RankLayout& dense,
                       const strategy::RankLayout* expert, bool embedding_group, taskgraph::Workload& w);

}  // namespace ptsim::workload::internal

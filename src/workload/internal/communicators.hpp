// The communicators of a step — TP and DP groups, the tied-embedding group
// and one channel per direction between neighbouring pipeline stages — and
// each rank's slot table. Private to workload/.
#pragma once

#include "ptsim/strategy/rank_layout.hpp"
#include "ptsim/taskgraph/workload.hpp"

namespace ptsim::workload::internal {

/// Fills w.communicators and w.communicator_of (w.comm_slot_names must be set).
void add_communicators(const strategy::RankLayout& layout, bool embedding_group,
                       taskgraph::Workload& w);

}  // namespace ptsim::workload::internal

// What one rank's communication moves in nccl-tests' bus-bandwidth
// convention, per task category. A reporting convention, not something the
// engine needs to run a step: it lives here, beside the figures that use it.
#pragma once

#include <vector>

#include "ptsim/common/ids.hpp"
#include "ptsim/taskgraph/workload.hpp"

namespace ptsim::report::internal {

/// bus_bytes_by_category(w, rank)[c]: the bus bytes of rank `rank`'s tasks of
/// category c over the whole step — all-reduce 2(n−1)/n·S, all-gather,
/// reduce-scatter and all-to-all (n−1)/n·S, broadcast and reduce S, a send
/// S, a receive 0, for a task of S bytes on a communicator of n members.
/// Indexed like Workload::category_names.
std::vector<double> bus_bytes_by_category(const taskgraph::Workload& w, Rank rank);

}  // namespace ptsim::report::internal

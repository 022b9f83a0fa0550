// Diagnostics for runs that cannot finish: which ranks are stuck, on which
// task, waiting for what. Private to engine/.
#pragma once

#include <string>

#include "internal/run_state.hpp"
#include "ptsim/taskgraph/workload.hpp"

namespace ptsim::engine::internal {

/// The message of the SimulationError thrown when the event queue drains
/// before every rank has finished: up to a few blocked ranks, each stream's
/// head task and what it waits for.
std::string describe_blocked(const RunState& state, const taskgraph::Workload& w);

/// Throws SimulationError unless `arriving` is the operation `first` expects
/// from another member of the same communicator: the same collective of the
/// same size, or the other end of the same transfer.
void check_matching(const taskgraph::Task& first, const taskgraph::Task& arriving,
                    const taskgraph::Workload& w, Rank rank, taskgraph::CommunicatorId id);

}  // namespace ptsim::engine::internal

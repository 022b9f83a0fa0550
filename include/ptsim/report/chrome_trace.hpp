// Chrome trace-event JSON of the recorded ranks: one process per rank, one
// thread per stream, one complete event per task, and a memory counter per
// rank. Opens in Perfetto (ui.perfetto.dev) and chrome://tracing.
#pragma once

#include <ostream>

#include "ptsim/engine/run_result.hpp"
#include "ptsim/taskgraph/workload.hpp"

namespace ptsim::report {

void write_chrome_trace(const engine::RunResult& run, const taskgraph::Workload& workload,
                        std::ostream& out);

}  // namespace ptsim::report

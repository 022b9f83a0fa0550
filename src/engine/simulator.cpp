// The simulation's set-up and event loop (see simulator.hpp and
// internal/run.hpp, which says where the rest of a run lives).
#include "ptsim/engine/simulator.hpp"

#include "internal/blocked_report.hpp"
#include "internal/run.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::engine {

namespace internal {

Run::Run(const taskgraph::Workload& w, const cost::CostModel& cost, const RunOptions& options)
    : w_(w),
      options_(options),
      state_(w, cost, options),
      network_(cost.links()),
      compute_mask_(w.compute_stream_mask),
      comm_mask_(~(w.compute_stream_mask | w.copy_stream_mask)),
      copy_mask_(w.copy_stream_mask),
      plans_(w, cost, network_, flow_weights()) {
  network_.defer_rates();
  Event::check_target(state_.ranks.size() == 0 ? 0 : state_.ranks.size() - 1, "simulated ranks");
  std::vector<SimulatedProgram> simulated;
  simulated.reserve(state_.ranks.size());
  for (const RankState& r : state_.ranks) {
    simulated.push_back({r.rank, r.program});
    host_issue_ = host_issue_ || r.program->host_issue;
  }
  plans_.plan_ahead(simulated);
}

}  // namespace internal

Simulator::Simulator(const taskgraph::Workload& workload, const cost::CostModel& cost)
    : workload_(&workload), cost_(&cost) {}

RunResult Simulator::run(const RunOptions& options) const {
  internal::Run run(*workload_, *cost_, options);
  return run.execute();
}

}  // namespace ptsim::engine

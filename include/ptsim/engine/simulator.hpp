// Simulator: runs a Workload event by event. Each simulated rank runs its
// program on ordered streams, as CUDA streams: a task starts when the task
// before it on its stream has finished, every task it depends on has finished,
// and — for collectives and transfers — every simulated member of its
// communicator has reached its matching operation (NCCL semantics: the k-th
// operation of each member on a communicator belong together). Time is integer
// nanoseconds, ties break by insertion order: same input, same result.
//
// Ranks not simulated (symmetric mode) are assumed to behave like the
// simulated member of their class: a collective waits only for the simulated
// members, and costs what the whole communicator costs.
#pragma once

#include <vector>

#include "ptsim/common/ids.hpp"
#include "ptsim/cost/cost_model.hpp"
#include "ptsim/engine/run_result.hpp"
#include "ptsim/taskgraph/workload.hpp"

namespace ptsim::engine {

struct RunOptions {
  std::vector<Rank> ranks;         // ranks to simulate, ascending; empty = every rank
  std::vector<Rank> record_ranks;  // ranks whose tasks and memory are recorded
  /// How many ranks each simulated rank stands for (symmetric mode): its
  /// flows weigh that much, shared among the communicator's simulated
  /// members, on links many ranks share (pod uplinks).
  double represents = 1;
  /// Kernels on these ranks take `factor` times longer (straggler what-ifs).
  std::vector<std::pair<Rank, double>> slow_gpus;
};

class Simulator {
 public:
  /// Both references must outlive the simulator.
  Simulator(const taskgraph::Workload& workload, const cost::CostModel& cost);

  /// Runs the step to completion. Throws SimulationError on a deadlock or a
  /// mismatched collective, naming the blocked tasks and ranks.
  RunResult run(const RunOptions& options) const;

 private:
  const taskgraph::Workload* workload_;
  const cost::CostModel* cost_;
};

}  // namespace ptsim::engine

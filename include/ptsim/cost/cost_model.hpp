// CostModel: binds the pure cost functions to one cluster, so the engine can
// ask for the duration of any task on any communicator. The communicator's
// members decide the tier: a collective runs at the speed of the innermost
// tier that connects all of them (the slowest link it must cross).
#pragma once

#include "ptsim/common/time.hpp"
#include "ptsim/hardware/cluster.hpp"
#include "ptsim/taskgraph/task.hpp"
#include "ptsim/taskgraph/workload.hpp"

namespace ptsim::cost {

class CostModel {
 public:
  explicit CostModel(const hardware::Cluster& cluster) : cluster_(&cluster) {}

  const hardware::Cluster& cluster() const { return *cluster_; }

  /// Duration of a compute task.
  Time compute_duration(const taskgraph::Task& task) const;
  /// Duration of a collective or transfer task over `communicator`.
  Time communication_duration(const taskgraph::Task& task,
                              const taskgraph::Communicator& communicator) const;

 private:
  const hardware::Cluster* cluster_;
};

}  // namespace ptsim::cost

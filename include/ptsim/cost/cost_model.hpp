// CostModel: binds the pure cost functions to one cluster, so the engine can
// ask how long a kernel runs and how a collective or transfer moves its bytes
// over the cluster's links. The only place hardware figures become time.
#pragma once

#include "ptsim/common/time.hpp"
#include "ptsim/cost/nccl_latency.hpp"
#include "ptsim/cost/transfer_plan.hpp"
#include "ptsim/hardware/cluster.hpp"
#include "ptsim/taskgraph/task.hpp"
#include "ptsim/taskgraph/workload.hpp"

namespace ptsim::cost {

class CostModel {
 public:
  explicit CostModel(const hardware::Cluster& cluster);

  const hardware::Cluster& cluster() const { return *cluster_; }

  /// Duration of a compute task on an unloaded GPU.
  Time compute_duration(const taskgraph::Task& task) const;
  /// Factor by which kernels slow down while communication runs on their GPU.
  double compute_slowdown_with_communication() const;
  /// How a collective or transfer task over `communicator` moves its bytes
  /// (NCCL's choice of algorithm and protocol).
  TransferPlan communication_plan(const taskgraph::Task& task,
                                  const taskgraph::Communicator& communicator) const;

 private:
  const hardware::Cluster* cluster_;
  LatencyModel latency_;
};

}  // namespace ptsim::cost

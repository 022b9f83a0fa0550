// CostModel: task → duration or transfer plan on this cluster (see cost_model.hpp).
#include "ptsim/cost/cost_model.hpp"

#include "ptsim/cost/collective_algorithms.hpp"
#include "ptsim/cost/compute_cost.hpp"

namespace ptsim::cost {

CostModel::CostModel(const hardware::Cluster& cluster)
    : cluster_(&cluster), latency_(cluster.profile()) {}

Time CostModel::compute_duration(const taskgraph::Task& task) const {
  return compute_time(cluster_->profile(), task);
}

double CostModel::compute_slowdown_with_communication() const {
  return 1 + cluster_->profile().gpu.comm_compute_slowdown;
}

TransferPlan CostModel::communication_plan(const taskgraph::Task& task,
                                           const taskgraph::Communicator& communicator) const {
  return choose_plan(task.collective, task.bytes, communicator.members, *cluster_, latency_);
}

}  // namespace ptsim::cost

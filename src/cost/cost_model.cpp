// CostModel: task → duration or transfer plan on this cluster (see cost_model.hpp).
#include "ptsim/cost/cost_model.hpp"

#include "ptsim/cost/collective_algorithms.hpp"
#include "ptsim/cost/compute_cost.hpp"
#include "ptsim/cost/expert_exchange.hpp"

#include <fmt/format.h>

#include "ptsim/common/error.hpp"

namespace ptsim::cost {

CostModel::CostModel(const hardware::Cluster& cluster, HostIssue host)
    : cluster_(&cluster),
      latency_(cluster.profile()),
      host_per_task_(Time::from_seconds(host.per_task_s)),
      host_per_python_op_s_(host.per_python_op_s) {}

Time CostModel::host_issue(const taskgraph::Task& task) const {
  // One figure for every task: the measurements there are (Transformer
  // Engine PR #1191: CPU time per forward of a whole linear module) do not
  // split the host's time by kernel. A task that makes the framework loop
  // over tensors in Python first costs each of those operations on top.
  // Kernels a CUDA graph replays cost nothing of their own; the replay
  // (a graph's first task) costs one task's time: the framework's call
  // into the graphed module, which then launches the graph.
  if (task.host_issue == taskgraph::HostIssue::InGraph) return Time{};
  if (task.host_ops == 0) return host_per_task_;
  return host_per_task_ + Time::from_seconds(static_cast<double>(task.host_ops) * host_per_python_op_s_);
}

Time CostModel::compute_duration(const taskgraph::Task& task) const {
  return compute_time(cluster_->profile(), task);
}

double CostModel::compute_slowdown_beside(const taskgraph::Task& task,
                                          const taskgraph::Communicator& communicator) const {
  const double sm_count = cluster_->profile().gpu.sm_count;
  if (task.collective != taskgraph::CollectiveKind::ExpertDispatch || sm_count <= 0)
    return 1 + cluster_->profile().gpu.comm_compute_slowdown;
  // DeepEP's and HybridEP's kernels each hold a fixed number of SMs for as
  // long as they run (one block an SM), which the kernels beside them lose:
  // those run on the rest, (N − S)/N of the GPU. NCCL's channels are in the
  // profile's measured figure instead.
  const taskgraph::ExpertExchange x = taskgraph::expert_exchange_of(task);
  const double sms = x.sms > 0 ? x.sms : default_exchange_sms(x.library, communicator.members, *cluster_);
  if (sms >= sm_count)
    throw ConfigError(
        fmt::format("{}: the {} exchange's kernels would hold {:g} SMs, not fewer than the {}'s {:g} (its profile's "
                    "gpu.sm_count), leaving no SM to the kernels beside them; give --moe-flex-dispatcher-num-sms below "
                    "{:g}",
                    x.sms > 0 ? "moe_flex_dispatcher_num_sms" : "the library's default SM count",
                    x.library == taskgraph::ExchangeLibrary::HybridEP ? "HybridEP" : "DeepEP", sms,
                    cluster_->profile().gpu.name, sm_count, sm_count));
  return sm_count / (sm_count - sms);
}

TransferPlan CostModel::communication_plan(const taskgraph::Task& task,
                                           const taskgraph::Communicator& communicator) const {
  if (task.collective == taskgraph::CollectiveKind::ExpertDispatch) {
    const taskgraph::ExpertExchange x = taskgraph::expert_exchange_of(task);
    return expert_dispatch_plan(task.bytes, static_cast<int>(x.topk), static_cast<int>(x.experts), communicator.members,
                                *cluster_, latency_, x.library, x.combine);
  }
  TransferPlan plan = choose_plan(task.collective, task.bytes, communicator.members, *cluster_, latency_);
  // A folded channel's bytes end on its stand-in's in-links; its time and
  // latency are the real pair's.
  if (communicator.receiver_stand_in)
    for (PhaseSpec& phase : plan.phases)
      for (FlowSpec& f : phase.flows) f.path = cluster_->folded_path(f.src, f.dst, *communicator.receiver_stand_in);
  const bool gather = task.collective == taskgraph::CollectiveKind::AllGather;
  if ((task.flags & taskgraph::kTensorList) && communicator.members.size() > 1 &&
      (gather || task.collective == taskgraph::CollectiveKind::ReduceScatter)) {
    // One copy kernel per member, each reading and writing its piece.
    const auto n = communicator.members.size();
    taskgraph::Task piece;
    piece.kernel = taskgraph::KernelClass::Copy;
    piece.bytes = 2 * task.bytes / n;
    const double copies_s = static_cast<double>(n) * compute_seconds(cluster_->profile(), piece, Load::Sustained);
    PhaseSpec copies;
    copies.latency = Time::from_seconds(copies_s);
    plan.phases.insert(gather ? plan.phases.end() : plan.phases.begin(), std::move(copies));
    plan.estimated_s += copies_s;
  }
  return plan;
}

}  // namespace ptsim::cost

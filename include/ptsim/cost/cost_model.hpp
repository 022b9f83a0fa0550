// CostModel: binds the pure cost functions to one cluster, so the engine can
// ask how long a kernel runs and how a collective or transfer moves its bytes
// over the cluster's links. The only place hardware figures become time.
#pragma once

#include "ptsim/common/time.hpp"
#include "ptsim/cost/nccl_latency.hpp"
#include "ptsim/cost/transfer_plan.hpp"
#include "ptsim/cost/links.hpp"
#include "ptsim/hardware/cluster.hpp"
#include "ptsim/taskgraph/task.hpp"
#include "ptsim/taskgraph/workload.hpp"

namespace ptsim::cost {

/// CPU time of one PyTorch tensor operation called from Python that launches
/// no kernel (a view such as `narrow`): "approx 2 us", half of it Python's
/// argument parsing (PyTorch maintainer ngimel, pytorch/pytorch#41383,
/// 2020-07-14, for x*x on a small tensor); PyTorch's operator
/// micro-benchmark times eager `split` at 2.26 µs whatever the device
/// (pytorch/pytorch PR #32194, 2020); "overhead for torch functions
/// consuming tensors is on the order of 2 us" (its __torch_function__
/// benchmarks, PR #34645, 2020). A lower bound for the loops it prices:
/// their Python statements around each operation are not counted.
inline constexpr double kPythonTensorOpS = 2e-6;

/// The host side of a step: the CPU time the framework spends issuing each
/// kernel or collective (Python, PyTorch's dispatcher, the framework's
/// modules, the launch call). A property of the software and the host CPU,
/// given by the user; zero means the host always keeps ahead of the GPU.
struct HostIssue {
  double per_task_s = 0;
  /// Each of a task's Task::host_ops: one PyTorch tensor operation called
  /// from Python (kPythonTensorOpS).
  double per_python_op_s = kPythonTensorOpS;
};

class CostModel {
 public:
  explicit CostModel(const hardware::Cluster& cluster, HostIssue host = {});

  const hardware::Cluster& cluster() const { return *cluster_; }
  /// The cluster's links, for the engine's flows.
  Links links() const { return Links(*cluster_); }

  /// Duration of a compute task on an unloaded GPU.
  Time compute_duration(const taskgraph::Task& task) const;
  /// CPU time the host spends issuing `task` (a kernel, or a rank's call of
  /// a collective or transfer): the task cannot start on the GPU before the
  /// host has issued it and every task before it in the rank's program.
  Time host_issue(const taskgraph::Task& task) const;
  /// Factor by which kernels slow down while `task` (a rank's part of a
  /// collective or transfer over `communicator`) runs on their GPU: NCCL's,
  /// the profile's figure; a DeepEP or HybridEP exchange's, the SMs its
  /// kernels hold taken from the kernels beside it. Throws ConfigError when
  /// the exchange would hold every SM of the GPU.
  double compute_slowdown_beside(const taskgraph::Task& task, const taskgraph::Communicator& communicator) const;
  /// How a collective or transfer task over `communicator` moves its bytes
  /// (NCCL's choice of algorithm and protocol).
  TransferPlan communication_plan(const taskgraph::Task& task,
                                  const taskgraph::Communicator& communicator) const;

 private:
  const hardware::Cluster* cluster_;
  LatencyModel latency_;
  Time host_per_task_;
  double host_per_python_op_s_;
};

}  // namespace ptsim::cost

// Roofline kernel time (see compute_cost.hpp).
#include "ptsim/cost/compute_cost.hpp"

#include <algorithm>

namespace ptsim::cost {

double compute_seconds(const hardware::GpuSpec& gpu, const taskgraph::Task& task) {
  const double memory_s = static_cast<double>(task.bytes) /
                          (gpu.memory_bandwidth_bytes_per_s * gpu.memory_efficiency);
  double math_s = 0;
  if (task.compute == taskgraph::ComputeKind::Matmul && task.flops > 0)
    math_s = task.flops / (gpu.peak_flops(task.dtype) * gpu.gemm_efficiency);
  return std::max(math_s, memory_s) + gpu.kernel_launch_overhead_s;
}

Time compute_time(const hardware::GpuSpec& gpu, const taskgraph::Task& task) {
  return Time::from_seconds(compute_seconds(gpu, task));
}

}  // namespace ptsim::cost

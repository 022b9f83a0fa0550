// Compute cost: the time a kernel takes on one GPU — a roofline with the
// profile's achievable efficiencies, plus the per-kernel launch overhead:
//   t = max(FLOP / (peak(dtype) · gemm_efficiency), bytes / (HBM · memory_efficiency)) + launch
// Pure function; one of the two places where hardware numbers become seconds.
#pragma once

#include "ptsim/common/time.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/taskgraph/task.hpp"

namespace ptsim::cost {

/// Seconds a compute task takes on `gpu` (matmul FLOP at the dtype's tensor
/// rate; memory-bound kernels by their bytes only).
double compute_seconds(const hardware::GpuSpec& gpu, const taskgraph::Task& task);

/// compute_seconds rounded to integer simulated time.
Time compute_time(const hardware::GpuSpec& gpu, const taskgraph::Task& task);

}  // namespace ptsim::cost

// A measured kernel as the Task the cost model prices. Private to calibrate/.
#pragma once

#include <optional>
#include <string>

#include "ptsim/hardware/measurement_set.hpp"
#include "ptsim/taskgraph/task.hpp"

namespace ptsim::calibrate::internal {

/// The kernel class of a memory-bound measurement op, or empty.
std::optional<taskgraph::KernelClass> memory_class(const std::string& op);

/// The compute task a gemm, attention or memory-bound measurement describes.
taskgraph::Task kernel_task(const hardware::KernelMeasurement& k);

}  // namespace ptsim::calibrate::internal

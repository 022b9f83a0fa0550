// summarize: RunResult (what the engine saw) + StepWorkload (what the step
// was) → StepResult (what the user reads).
#pragma once

#include "ptsim/engine/run_result.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/report/step_result.hpp"
#include "ptsim/strategy/parallel_config.hpp"
#include "ptsim/workload/step_workload.hpp"

namespace ptsim::report {

StepResult summarize(const engine::RunResult& run, const workload::StepWorkload& step,
                     const strategy::ParallelConfig& config,
                     const hardware::HardwareProfile& hardware);

}  // namespace ptsim::report

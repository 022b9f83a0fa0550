// simulate_step: the whole flow for one training step —
//   (model, hardware, strategy) → workload → engine run → StepResult.
// The one entry point the CLI, and later the planner and validator, call.
#pragma once

#include <optional>
#include <vector>

#include "ptsim/engine/run_result.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/report/step_result.hpp"
#include "ptsim/strategy/parallel_config.hpp"
#include "ptsim/workload/step_workload.hpp"

namespace ptsim::simulate {

enum class Mode {
  Explicit,   // every rank simulated
  Symmetric,  // one rank per pipeline stage stands for its TP and DP peers
  Auto,       // symmetric for large homogeneous jobs, explicit otherwise
};

/// Jobs above this many ranks run symmetric under Mode::Auto.
inline constexpr std::int64_t kAutoSymmetricAbove = 64;

/// A straggler or a degraded link, for what-if studies (explicit mode only).
struct Degradation {
  enum class Kind { Gpu, Nvlink, Nic, Pod };
  Kind kind = Kind::Gpu;
  std::int64_t index = 0;  // rank, or pod for Kind::Pod
  double factor = 1;       // kernels take `factor` times longer / links carry 1/factor
};

struct Request {
  model::ModelSpec model;
  hardware::HardwareProfile hardware;
  strategy::ParallelConfig parallel;
  Mode mode = Mode::Explicit;
  /// Ranks whose tasks are recorded for a trace; empty records none.
  std::vector<Rank> record_ranks;
  std::vector<Degradation> degradations;
};

struct Outcome {
  workload::StepWorkload step;
  engine::RunResult run;
  report::StepResult result;
};

/// Runs one step. Throws ConfigError when symmetric mode is asked for but
/// would not be exact (peers of one stage reach their groups over different
/// parts of the network, or a degradation singles one out) or a degradation
/// names a rank or pod the job does not have; SimulationError when the step
/// cannot complete.
Outcome simulate_step(const Request& request);

/// `parallel` with what the software does differently on `hardware`'s GPU
/// filled in (ParallelConfig::fp8_any_layout), and the host's time per
/// task where the profile knows it and the run set none; simulate_step applies it to
/// its request, and whatever prices a strategy without it (the planner's
/// bounds, kernel listings) applies it first.
strategy::ParallelConfig on_hardware(strategy::ParallelConfig parallel, const hardware::HardwareProfile& hardware);

/// Ranks worth tracing by default: all when there are at most 16, otherwise
/// the first rank of each pipeline stage.
std::vector<Rank> default_trace_ranks(const strategy::ParallelConfig& parallel);

}  // namespace ptsim::simulate

// Capacity planning: from one step's time to the time, GPU-hours, cost and
// energy of a whole training run (ptsim report). Pure arithmetic, units in
// the names.
#pragma once

#include <cstdint>
#include <optional>

namespace ptsim::plan {

inline constexpr double kSecondsPerHour = 3'600;
inline constexpr double kSecondsPerDay = 86'400;
inline constexpr double kJoulesPerMegawattHour = 3.6e9;

struct TrainingRun {
  double tokens = 0;           // to train
  double tokens_per_step = 0;  // global batch × sequence length
  std::optional<double> price_per_gpu_hour_usd;
  std::optional<double> gpu_power_watts;  // GPUs only: no host, network or cooling
  std::optional<double> deadline_days;
};

/// Steps a run of `tokens` takes: ⌈tokens / tokens per step⌉.
double training_steps(const TrainingRun& run);

struct TrainingCost {
  double steps = 0;
  double time_s = 0;  // steps × step time
  double days = 0;
  double gpu_hours = 0;              // time × GPUs
  std::optional<double> cost_usd;    // GPU-hours × price
  std::optional<double> energy_mwh;  // watts × GPUs × time
  std::optional<bool> meets_deadline;
};

TrainingCost training_cost(const TrainingRun& run, double step_time_s, std::int64_t gpus);

/// The global batch ptsim report assumes when none is given: the largest
/// power of two of sequences within 4,194,304 tokens (Llama 3's main-stage
/// batch of about 4M tokens, arXiv 2407.21783 §3.4.1).
std::int64_t default_global_batch(std::int64_t seq_length);

}  // namespace ptsim::plan

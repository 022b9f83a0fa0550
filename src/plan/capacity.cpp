// Time, GPU-hours, cost and energy of a training run (see capacity.hpp).
#include "ptsim/plan/capacity.hpp"

#include <cmath>

namespace ptsim::plan {

double training_steps(const TrainingRun& run) { return std::ceil(run.tokens / run.tokens_per_step); }

TrainingCost training_cost(const TrainingRun& run, double step_time_s, std::int64_t gpus) {
  TrainingCost c;
  const auto n = static_cast<double>(gpus);
  c.steps = training_steps(run);
  c.time_s = c.steps * step_time_s;
  c.days = c.time_s / kSecondsPerDay;
  c.gpu_hours = c.time_s * n / kSecondsPerHour;
  if (run.price_per_gpu_hour_usd) c.cost_usd = c.gpu_hours * *run.price_per_gpu_hour_usd;
  if (run.gpu_power_watts) c.energy_mwh = *run.gpu_power_watts * n * c.time_s / kJoulesPerMegawattHour;
  if (run.deadline_days) c.meets_deadline = c.days <= *run.deadline_days;
  return c;
}

std::int64_t default_global_batch(std::int64_t seq_length) {
  constexpr std::int64_t kTokens = 4'194'304;
  std::int64_t b = 1;
  while (2 * b * seq_length <= kTokens) b *= 2;
  return b;
}

}  // namespace ptsim::plan

// Step orders of the naive, GPipe and 1F1B schedules (see pipeline_schedule.hpp).
#include "ptsim/strategy/pipeline_schedule.hpp"

#include <algorithm>

#include "ptsim/common/error.hpp"

namespace ptsim::strategy {

namespace {

std::vector<PipelineStep> all_forward_then_backward(std::int64_t m) {
  std::vector<PipelineStep> steps;
  steps.reserve(static_cast<std::size_t>(2 * m));
  for (std::int64_t i = 0; i < m; ++i) steps.push_back({Pass::Forward, i});
  for (std::int64_t i = m - 1; i >= 0; --i) steps.push_back({Pass::Backward, i});
  return steps;
}

// Megatron-LM forward_backward_pipelining_without_interleaving: warm-up of
// min(p − s − 1, m) forwards, then (F, B) pairs, then the remaining backwards.
std::vector<PipelineStep> one_f_one_b(std::int64_t stage, std::int64_t p, std::int64_t m) {
  const std::int64_t warmup = std::min(p - stage - 1, m);
  std::vector<PipelineStep> steps;
  steps.reserve(static_cast<std::size_t>(2 * m));
  std::int64_t next_f = 0;
  std::int64_t next_b = 0;
  for (; next_f < warmup; ++next_f) steps.push_back({Pass::Forward, next_f});
  while (next_f < m) {
    steps.push_back({Pass::Forward, next_f++});
    steps.push_back({Pass::Backward, next_b++});
  }
  while (next_b < m) steps.push_back({Pass::Backward, next_b++});
  return steps;
}

}  // namespace

std::vector<PipelineStep> make_pipeline_order(ScheduleKind kind, std::int64_t stage,
                                              std::int64_t num_stages,
                                              std::int64_t num_microbatches, std::int64_t chunks) {
  PTSIM_ASSERT(chunks == 1, "model chunks are not implemented yet");
  PTSIM_ASSERT(stage >= 0 && stage < num_stages, "stage must lie in [0, num_stages)");
  PTSIM_ASSERT(num_microbatches >= 1, "at least one micro-batch");
  switch (kind) {
    case ScheduleKind::Naive:
      PTSIM_ASSERT(num_microbatches == 1, "naive model parallelism runs one micro-batch");
      return all_forward_then_backward(1);
    case ScheduleKind::GPipe: return all_forward_then_backward(num_microbatches);
    case ScheduleKind::OneFOneB: return one_f_one_b(stage, num_stages, num_microbatches);
    default: PTSIM_ASSERT(false, "schedule not implemented yet");
  }
  return {};
}

}  // namespace ptsim::strategy

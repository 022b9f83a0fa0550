// The step order of each pipeline schedule (pipeline_schedule.cpp), one
// function a schedule with the signature ScheduleDescriptor::order names.
// Private to strategy/.
#pragma once

#include <cstdint>
#include <vector>

#include "ptsim/strategy/pipeline_schedule.hpp"

namespace ptsim::strategy::internal {

std::vector<PipelineStep> naive_order(std::int64_t stage, std::int64_t p, std::int64_t m, std::int64_t chunks);
std::vector<PipelineStep> gpipe_order(std::int64_t stage, std::int64_t p, std::int64_t m, std::int64_t chunks);
std::vector<PipelineStep> one_f_one_b_order(std::int64_t stage, std::int64_t p, std::int64_t m, std::int64_t chunks);
std::vector<PipelineStep> interleaved_order(std::int64_t stage, std::int64_t p, std::int64_t m, std::int64_t chunks);
std::vector<PipelineStep> zb_h1_order(std::int64_t stage, std::int64_t p, std::int64_t m, std::int64_t chunks);
std::vector<PipelineStep> zb_h2_order(std::int64_t stage, std::int64_t p, std::int64_t m, std::int64_t chunks);
/// Interleaved 1F1B (or 1F1B on one stage) with one more warm-up forward and
/// every steady-state (F, B) pair overlapped: --overlap-moe-expert-parallel-comm.
std::vector<PipelineStep> combined_1f1b_order(ScheduleKind kind, std::int64_t stage, std::int64_t p, std::int64_t m,
                                              std::int64_t chunks);
std::vector<PipelineStep> dual_pipe_order(std::int64_t stage, std::int64_t p, std::int64_t m, std::int64_t chunks);

}  // namespace ptsim::strategy::internal

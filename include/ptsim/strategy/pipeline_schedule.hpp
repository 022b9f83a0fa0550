// Pipeline schedules: the order of forward (F) and backward (B) steps one
// pipeline stage runs in a training step. Pure functions of (stage, stages,
// micro-batches); the workload builder turns each step into ops.
//
// Naive model parallelism: one micro-batch, m = 1 (p = 4 shown):
//   stage 0: F0 ............ B0        each stage idles while the others work:
//   stage 3:       F0 B0               step = p·(F+B), bubble (p−1)/p
//
// GPipe, 4 stages, 4 micro-batches: all forwards, then all backwards in
// reverse micro-batch order (Huang et al. 2019, Fig. 2c):
//   stage 0: F0 F1 F2 F3 ......... B3 B2 B1 B0
//   stage 3:          F0 F1 F2 F3 B3 B2 B1 B0
//   bubble fraction (p−1)/(m+p−1); stage 0 holds m micro-batches of activations.
//
// 1F1B (PipeDream-Flush, Narayanan et al. 2021 §2.2), stage 0 of 4, 8
// micro-batches: warm-up = stages − stage − 1 = 3 forwards, then alternate,
// then drain the remaining backwards:
//   F0 F1 F2 | F3 B0  F4 B1  F5 B2  F6 B3  F7 B4 | B5 B6 B7
//   warm-up  |          steady 1F1B              | cool-down
// Same bubble as GPipe, but at most stages − stage micro-batches in flight.
#pragma once

#include <cstdint>
#include <vector>

#include "ptsim/strategy/parallel_config.hpp"

namespace ptsim::strategy {

enum class Pass : std::uint8_t { Forward, Backward };

struct PipelineStep {
  Pass pass = Pass::Forward;
  std::int64_t microbatch = 0;
  friend bool operator==(const PipelineStep&, const PipelineStep&) = default;
};

/// The ordered steps of `stage` (0-based) of a `num_stages` pipeline running
/// `num_microbatches` micro-batches. Naive requires num_microbatches == 1.
std::vector<PipelineStep> make_pipeline_order(ScheduleKind kind, std::int64_t stage,
                                              std::int64_t num_stages,
                                              std::int64_t num_microbatches);

}  // namespace ptsim::strategy

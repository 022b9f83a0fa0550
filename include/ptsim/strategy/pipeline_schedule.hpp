// Pipeline schedules: the order of forward (F) and backward steps one
// pipeline stage runs in a training step. Pure functions of (stage, stages,
// micro-batches, model chunks); the workload builder turns each step into ops.
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
//
// Interleaved 1F1B (Megatron-LM's forward_backward_pipelining_with_interleaving):
// each stage holds v model chunks; chunk c of stage s is virtual stage c·p + s,
// so a micro-batch visits stage 0..p−1 v times. Bubble (p−1)/(v·m + p−1).
//
// Zero bubble (Qi et al. 2023, arXiv 2401.10241): the backward is split into
// B (input gradients, on the critical path) and W (weight gradients, which
// only the optimizer waits for). Round x of stage i runs F_x, B_(x−d_B),
// W_(x−d_W), each when its index lies in [0, m):
//   ZB-H1: d_B = p−1−i, d_W = p−1      (1F1B's peak memory, bubble (p−1)(F+B−W))
//   ZB-H2: d_B = 2(p−1−i), d_W = 2(p−1)  (about twice the memory, bubble ≈ 0)
//
// DualPipe (DeepSeek-V3, deepseek-ai/DualPipe dualpipe.py): p even, m even and
// ≥ 2p; half the micro-batches enter at stage 0 (direction 0) and half at stage
// p−1 (direction 1). Rank r holds two chunks: chunk 0 is model stage r of
// direction 0, chunk 1 is model stage p−1−r of direction 1 (twice the
// parameters of a 1F1B stage). Its eight phases mix full backwards, B/W splits
// and forward–backward pairs that run overlapped (one's communication under
// the other's compute).
#pragma once

#include <cstdint>
#include <vector>

#include "ptsim/strategy/parallel_config.hpp"

namespace ptsim::strategy {

enum class Pass : std::uint8_t {
  Forward,
  Backward,        // full backward: input and weight gradients
  BackwardInput,   // B of a zero-bubble split: input gradients only
  BackwardWeight,  // W of a zero-bubble split: weight gradients of an earlier B
};

struct PipelineStep {
  Pass pass = Pass::Forward;
  /// Micro-batch index in [0, m). DualPipe: direction 0 runs 0 … m/2−1,
  /// direction 1 runs m/2 … m−1.
  std::int64_t microbatch = 0;
  /// Model chunk on this stage: interleaved 0 … v−1 (virtual stage chunk·p +
  /// stage); DualPipe 0 (direction 0) or 1 (direction 1); otherwise 0.
  std::int64_t chunk = 0;
  /// DualPipe's forward–backward pairs, and combined 1F1B's: this forward
  /// runs overlapped with the next step, a backward of another micro-batch.
  bool overlapped_with_next = false;
  friend bool operator==(const PipelineStep&, const PipelineStep&) = default;
};

/// The ordered steps of `stage` (0-based) of a `num_stages` pipeline running
/// `num_microbatches` micro-batches over `chunks` model chunks per stage
/// (interleaved: v ≥ 2; DualPipe: 2; others 1). Preconditions (checked by
/// config::resolve_run, asserted here): naive runs one micro-batch;
/// interleaved needs m to be a multiple of p (Megatron-Core's groups of p
/// micro-batches); DualPipe needs an even p, and m even and ≥ 2p.
/// `combined_1f1b`: Megatron-Core's schedule under
/// --overlap-moe-expert-parallel-comm (interleaved, or 1F1B on one stage):
/// one more warm-up forward and every steady-state forward overlapped with
/// the backward after it.
std::vector<PipelineStep> make_pipeline_order(ScheduleKind kind, std::int64_t stage, std::int64_t num_stages,
                                              std::int64_t num_microbatches, std::int64_t chunks = 1,
                                              bool combined_1f1b = false);

/// The virtual stage (position along its micro-batch's path, 0 … p·chunks−1
/// for interleaving, 0 … p−1 for DualPipe's two directions) of `chunk` on `stage`.
std::int64_t virtual_stage(ScheduleKind kind, std::int64_t stage, std::int64_t num_stages,
                           std::int64_t chunk);

}  // namespace ptsim::strategy

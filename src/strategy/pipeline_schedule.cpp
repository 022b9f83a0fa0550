// Step orders of every pipeline schedule (see pipeline_schedule.hpp): naive,
// GPipe, 1F1B, interleaved 1F1B, ZB-H1, ZB-H2 and DualPipe. Notation in the
// pictures: F3 is the forward of micro-batch 3; F3.1 that of micro-batch 3 on
// model chunk 1; B is a full backward, Bi/W the two halves of a split one.
#include "ptsim/strategy/pipeline_schedule.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <utility>

#include "internal/schedule_orders.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/strategy/schedule.hpp"

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
// min(p − s − 1, m) forwards, then (F, B) pairs, then the remaining
// backwards. `combined`: combined 1F1B (see combined_1f1b_order).
std::vector<PipelineStep> one_f_one_b(std::int64_t stage, std::int64_t p, std::int64_t m, bool combined = false) {
  const std::int64_t warmup = std::min(p - stage - 1 + (combined ? 1 : 0), m);
  std::vector<PipelineStep> steps;
  steps.reserve(static_cast<std::size_t>(2 * m));
  std::int64_t next_f = 0;
  std::int64_t next_b = 0;
  for (; next_f < warmup; ++next_f) steps.push_back({Pass::Forward, next_f});
  while (next_f < m) {
    steps.push_back({Pass::Forward, next_f++, 0, combined});
    steps.push_back({Pass::Backward, next_b++});
  }
  while (next_b < m) steps.push_back({Pass::Backward, next_b++});
  return steps;
}

// Megatron-Core get_schedule_table with microbatch_group_size_per_vp_stage = p:
// micro-batches in groups of p (p divides m), and within each group every
// chunk in turn visits the group's micro-batches. Entry k is the k-th forward
// as (micro-batch, chunk); the k-th backward is the same entry with the chunk
// reversed (v − 1 − chunk).
std::vector<std::pair<std::int64_t, std::int64_t>> interleaved_table(std::int64_t p,
                                                                     std::int64_t m,
                                                                     std::int64_t v) {
  std::vector<std::pair<std::int64_t, std::int64_t>> table;
  table.reserve(static_cast<std::size_t>(m * v));
  for (std::int64_t first = 0; first < m; first += p)
    for (std::int64_t c = 0; c < v; ++c)
      for (std::int64_t mb = first; mb < first + p; ++mb) table.emplace_back(mb, c);
  return table;
}

// Megatron-Core forward_backward_pipelining_with_interleaving. With total =
// m·v forwards, warm-up = total when m = p (as Megatron-Core before its tunable
// schedule; same makespan as its newer rule), else min((p − s − 1)·2 + (v − 1)·p, total)
// (get_pp_rank_microbatches); then the k-th (F, B) pair runs forward
// warm-up + k and backward k; then the remaining backwards. p = 2, v = 2, m = 4
// (table F: 0.0 1.0 0.1 1.1 2.0 3.0 2.1 3.1, B: 0.1 1.1 0.0 1.0 2.1 3.1 2.0 3.0):
//   stage 0, warm-up 4: F0.0 F1.0 F0.1 F1.1 | F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0
//                       | B2.1 B3.1 B2.0 B3.0
//   stage 1, warm-up 2: F0.0 F1.0 | F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1
//                       F3.1 B3.1 | B2.0 B3.0
std::vector<PipelineStep> interleaved(std::int64_t stage, std::int64_t p, std::int64_t m, std::int64_t v,
                                      bool combined = false) {
  const auto table = interleaved_table(p, m, v);
  const std::int64_t total = m * v;
  const std::int64_t warmup = m == p ? total : std::min((p - stage - 1) * 2 + (v - 1) * p + (combined ? 1 : 0), total);
  const auto forward = [&](std::int64_t k) {
    const auto& [mb, c] = table[static_cast<std::size_t>(k)];
    return PipelineStep{Pass::Forward, mb, c};
  };
  const auto backward = [&](std::int64_t k) {
    const auto& [mb, c] = table[static_cast<std::size_t>(k)];
    return PipelineStep{Pass::Backward, mb, v - 1 - c};
  };
  std::vector<PipelineStep> steps;
  steps.reserve(static_cast<std::size_t>(2 * total));
  for (std::int64_t k = 0; k < warmup; ++k) steps.push_back(forward(k));
  for (std::int64_t k = 0; k < total - warmup; ++k) {
    steps.push_back(forward(warmup + k));
    steps.back().overlapped_with_next = combined;
    steps.push_back(backward(k));
  }
  for (std::int64_t k = total - warmup; k < total; ++k) steps.push_back(backward(k));
  return steps;
}

// Zero bubble (Qi et al. 2023 §3): round x runs F_x, Bi_(x − d_B), W_(x − d_W),
// each only when its index lies in [0, m). ZB-H1 (d_B = p − 1 − i, d_W = p − 1),
// p = 4, m = 6:
//   stage 0: F0 F1 F2 | F3 Bi0 W0 F4 Bi1 W1 F5 Bi2 W2 | Bi3 W3 Bi4 W4 Bi5 W5
//   stage 3: F0 Bi0 F1 Bi1 F2 Bi2 F3 Bi3 W0 F4 Bi4 W1 F5 Bi5 W2 | W3 W4 W5
// Every stage keeps p micro-batches between F and W, as 1F1B's stage 0 does.
std::vector<PipelineStep> zero_bubble(std::int64_t m, std::int64_t delay_b,
                                      std::int64_t delay_w) {
  std::vector<PipelineStep> steps;
  steps.reserve(static_cast<std::size_t>(3 * m));
  const auto in_range = [m](std::int64_t mb) { return mb >= 0 && mb < m; };
  for (std::int64_t x = 0; static_cast<std::int64_t>(steps.size()) < 3 * m; ++x) {
    if (in_range(x)) steps.push_back({Pass::Forward, x});
    if (in_range(x - delay_b)) steps.push_back({Pass::BackwardInput, x - delay_b});
    if (in_range(x - delay_w)) steps.push_back({Pass::BackwardWeight, x - delay_w});
  }
  return steps;
}

// deepseek-ai/DualPipe dualpipe.py, DualPipe.step(). A "phase" there is a
// chunk seen from the rank's half: phase 0 is chunk 0 (direction 0) on ranks
// 0 … p/2 − 1 and chunk 1 on the others. Each chunk's forwards and backwards
// run its micro-batches in increasing order; chunk 0 holds 0 … m/2 − 1 and
// chunk 1 holds m/2 … m − 1. Weight gradients of split backwards wait in one
// FIFO queue across both chunks (the repo's WeightGradStore).
class DualPipeOrder {
 public:
  DualPipeOrder(std::int64_t rank, std::int64_t p, std::int64_t m)
      : half_(m / 2), second_half_(rank >= p / 2 ? 1 : 0) {}

  void forward(std::int64_t phase, bool overlapped = false) {
    const std::int64_t c = chunk(phase);
    steps_.push_back({Pass::Forward, c * half_ + next_f_[idx(c)]++, c, overlapped});
  }
  // Full backward, or with zero_bubble the input half, its W queued.
  void backward(std::int64_t phase, bool zero_bubble = false) {
    const std::int64_t c = chunk(phase);
    const std::int64_t mb = c * half_ + next_b_[idx(c)]++;
    steps_.push_back({zero_bubble ? Pass::BackwardInput : Pass::Backward, mb, c});
    if (zero_bubble) weights_.push_back({Pass::BackwardWeight, mb, c});
  }
  void weight() {
    PTSIM_ASSERT(!weights_.empty(), "DualPipe pops an empty weight-gradient queue");
    steps_.push_back(weights_.front());
    weights_.pop_front();
  }
  // Forward of phase0 overlapped with the full backward of phase1.
  void forward_backward(std::int64_t phase0, std::int64_t phase1) {
    forward(phase0, true);
    backward(phase1);
  }
  std::vector<PipelineStep> take() {
    PTSIM_ASSERT(weights_.empty(), "DualPipe leaves weight gradients queued");
    return std::move(steps_);
  }

 private:
  std::int64_t chunk(std::int64_t phase) const { return phase ^ second_half_; }
  static std::size_t idx(std::int64_t c) { return static_cast<std::size_t>(c); }

  std::int64_t half_;
  std::int64_t second_half_;
  std::array<std::int64_t, 2> next_f_{};
  std::array<std::int64_t, 2> next_b_{};
  std::deque<PipelineStep> weights_;
  std::vector<PipelineStep> steps_;
};

// The eight phases of DualPipe.step(), with h = min(r, p − 1 − r), n = p/2
// and half = m/2 micro-batches per direction. "~" marks an overlapped
// forward–backward pair, ' chunk 1. p = 4, m = 8 (n = 2):
//   rank 0 (h = 0):  F0 F1 | F2 F4' | Bi4' W4' F5' | F3~B5' F6'~B0 | B6' F7'~B1
//                    | B7' Bi2 | W2 Bi3 | W3
//   rank 1 (h = 1):  F0 F4' F1 F5' | F2 B4' F6'~B0 F3~B5' F7'~B1 | B6' B2 Bi7' Bi3 | W7' W3
// (rank 1 is a middle rank: its first F0 and B1 of the main phase do not overlap.)
std::vector<PipelineStep> dual_pipe(std::int64_t rank, std::int64_t p, std::int64_t m) {
  const std::int64_t n = p / 2;
  const std::int64_t h = std::min(rank, p - 1 - rank);
  const bool middle = rank == n - 1 || rank == n;
  DualPipeOrder o(rank, p, m);
  for (std::int64_t i = 0; i < (n - h - 1) * 2; ++i) o.forward(0);  // 1: nF0
  for (std::int64_t i = 0; i < h + 1; ++i) {                        // 2: nF0F1
    o.forward(0);
    o.forward(1);
  }
  for (std::int64_t i = 0; i < n - h - 1; ++i) {  // 3: nB1W1F1, zero bubble
    o.backward(1, true);
    o.weight();
    o.forward(1);
  }
  for (std::int64_t i = 0; i < m / 2 - p + h + 1; ++i) {  // 4: nF0B1F1B0, the main phase
    if (i == 0 && middle) {
      o.forward(0);
      o.backward(1);
    } else {
      o.forward_backward(0, 1);
    }
    o.forward_backward(1, 0);
  }
  for (std::int64_t i = 0; i < n - h - 1; ++i) {  // 5: nB1F1B0
    o.backward(1);
    o.forward_backward(1, 0);
  }
  bool zero_bubble = false;  // 6: nB1B0, the second half of it split
  for (std::int64_t i = 0; i < h + 1; ++i) {
    if (i == (h + 1) / 2 && h % 2 == 1) zero_bubble = true;
    o.backward(1, zero_bubble);
    if (i == (h + 1) / 2 && h % 2 == 0) zero_bubble = true;
    o.backward(0, zero_bubble);
  }
  for (std::int64_t i = 0; i < n - h - 1; ++i) {  // 7: nWB0, zero bubble
    o.weight();
    o.backward(0, true);
  }
  for (std::int64_t i = 0; i < h + 1; ++i) o.weight();  // 8: nW
  return o.take();
}

}  // namespace

namespace internal {

std::vector<PipelineStep> naive_order(std::int64_t, std::int64_t, std::int64_t m, std::int64_t chunks) {
  PTSIM_ASSERT(chunks == 1, "naive model parallelism runs one model chunk per stage");
  PTSIM_ASSERT(m == 1, "naive model parallelism runs one micro-batch");
  return all_forward_then_backward(1);
}

std::vector<PipelineStep> gpipe_order(std::int64_t, std::int64_t, std::int64_t m, std::int64_t chunks) {
  PTSIM_ASSERT(chunks == 1, "GPipe runs one model chunk per stage");
  return all_forward_then_backward(m);
}

std::vector<PipelineStep> one_f_one_b_order(std::int64_t stage, std::int64_t p, std::int64_t m, std::int64_t chunks) {
  PTSIM_ASSERT(chunks == 1, "1F1B runs one model chunk per stage");
  return one_f_one_b(stage, p, m);
}

std::vector<PipelineStep> interleaved_order(std::int64_t stage, std::int64_t p, std::int64_t m, std::int64_t chunks) {
  PTSIM_ASSERT(chunks >= 2, "interleaved 1F1B needs at least two model chunks per stage");
  // Megatron-Core rejects a last group smaller than p ("dependency bubbles");
  // with groups of p such an order can deadlock (p = 4, m = 9, v = 3 does).
  PTSIM_ASSERT(m >= p && m % p == 0,
               "interleaved 1F1B needs a number of micro-batches that is a multiple of stages");
  return interleaved(stage, p, m, chunks);
}

std::vector<PipelineStep> zb_h1_order(std::int64_t stage, std::int64_t p, std::int64_t m, std::int64_t chunks) {
  PTSIM_ASSERT(chunks == 1, "ZB-H1 runs one model chunk per stage");
  return zero_bubble(m, p - 1 - stage, p - 1);
}

std::vector<PipelineStep> zb_h2_order(std::int64_t stage, std::int64_t p, std::int64_t m, std::int64_t chunks) {
  PTSIM_ASSERT(chunks == 1, "ZB-H2 runs one model chunk per stage");
  return zero_bubble(m, 2 * (p - 1 - stage), 2 * (p - 1));
}

std::vector<PipelineStep> dual_pipe_order(std::int64_t stage, std::int64_t p, std::int64_t m, std::int64_t chunks) {
  PTSIM_ASSERT(chunks == 2, "DualPipe runs two model chunks per rank");
  PTSIM_ASSERT(p % 2 == 0, "DualPipe needs an even number of stages");
  PTSIM_ASSERT(m % 2 == 0 && m >= 2 * p, "DualPipe needs an even number of micro-batches, at least twice the stages");
  return dual_pipe(stage, p, m);
}

// Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm;
// pipeline_parallel/schedules.py get_pp_rank_microbatches and
// combined_1f1b_schedule_for_no_pipelining): one more warm-up forward, so
// that the forward and the backward of every steady-state pair belong to
// different micro-batches and neither waits for the other; each pair then
// runs as one step, the dispatch and combine of one under the other's
// kernels (models/common/model_chunk_schedule_plan.py,
// TransformerLayerSchedulePlan.run). p = 1, m = 3: F0 | F1~B0 F2~B1 | B2.
std::vector<PipelineStep> combined_1f1b_order(ScheduleKind kind, std::int64_t stage, std::int64_t p, std::int64_t m,
                                              std::int64_t chunks) {
  PTSIM_ASSERT(kind == ScheduleKind::Interleaved || (kind == ScheduleKind::OneFOneB && p == 1),
               "combined 1F1B runs the interleaved schedule, or one stage");
  return kind == ScheduleKind::Interleaved ? interleaved(stage, p, m, chunks, true) : one_f_one_b(stage, p, m, true);
}

}  // namespace internal

std::vector<PipelineStep> make_pipeline_order(ScheduleKind kind, std::int64_t stage, std::int64_t num_stages,
                                              std::int64_t num_microbatches, std::int64_t chunks, bool combined_1f1b) {
  PTSIM_ASSERT(stage >= 0 && stage < num_stages, "stage must lie in [0, num_stages)");
  PTSIM_ASSERT(num_microbatches >= 1, "at least one micro-batch");
  if (combined_1f1b) return internal::combined_1f1b_order(kind, stage, num_stages, num_microbatches, chunks);
  return describe(kind).order(stage, num_stages, num_microbatches, chunks);
}

std::int64_t virtual_stage(ScheduleKind kind, std::int64_t stage, std::int64_t num_stages,
                           std::int64_t chunk) {
  PTSIM_ASSERT(stage >= 0 && stage < num_stages, "stage must lie in [0, num_stages)");
  return describe(kind).virtual_stage(stage, num_stages, chunk);
}

}  // namespace ptsim::strategy

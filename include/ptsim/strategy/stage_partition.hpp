// StagePartition: which transformer layers each pipeline stage holds.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ptsim/strategy/parallel_config.hpp"

namespace ptsim::strategy {

struct LayerRange {
  std::int64_t first = 0;  // global index of the range's first layer
  std::int64_t count = 0;
};

/// Layer counts of `num_stages` consecutive stages, as even as possible. When
/// they do not divide the layers, the extra layers go to the inner stages
/// first (stage 0 already holds the most in-flight activations and the last
/// stage the LM head), then to stage 0, then to the last stage. `first` and
/// `last` fix the first and last stage's counts (Megatron's
/// --decoder-first/last-pipeline-num-layers); the rest is split evenly.
/// Example: 10 layers over 4 stages → 2, 3, 3, 2; Llama 3 405B's 126 over 16
/// → 7, 8 × 14, 7 (Meta's split).
/// Preconditions (checked by config::resolve_run): every stage gets a layer.
std::vector<std::int64_t> split_layers(std::int64_t num_layers, std::int64_t num_stages,
                                       std::optional<std::int64_t> first = std::nullopt,
                                       std::optional<std::int64_t> last = std::nullopt);

/// Consecutive ranges of the given counts.
std::vector<LayerRange> make_ranges(const std::vector<std::int64_t>& counts);

/// Even split into ranges (split_layers, then make_ranges).
std::vector<LayerRange> make_stage_partition(std::int64_t num_layers, std::int64_t num_stages);

/// The layers of each model chunk of `stage`: chunk c runs virtual stage
/// virtual_stage(schedule, stage, pp, c) of config.virtual_stage_layers.
std::vector<LayerRange> stage_chunks(const ParallelConfig& config, std::int64_t stage);

/// Model chunks each stage holds: vpp when interleaved, 2 for DualPipe, else 1.
std::int64_t chunks_per_stage(const ParallelConfig& config);

}  // namespace ptsim::strategy

// StagePartition: which transformer layers each pipeline stage holds.
#pragma once

#include <cstdint>
#include <vector>

namespace ptsim::strategy {

struct LayerRange {
  std::int64_t first = 0;  // global index of the stage's first layer
  std::int64_t count = 0;
};

/// Splits num_layers over num_stages as evenly as possible. When pp does not
/// divide the layers, the extra layers go to the inner stages first (stage 0
/// already holds the most in-flight activations and the last stage the LM
/// head), then to stage 0, then to the last stage.
/// Example: 10 layers over 4 stages → 2, 3, 3, 2.
/// Precondition: 1 ≤ num_stages ≤ num_layers.
std::vector<LayerRange> make_stage_partition(std::int64_t num_layers, std::int64_t num_stages);

}  // namespace ptsim::strategy

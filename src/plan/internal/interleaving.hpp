// The interleaving depths the searches offer a pipeline. Private to plan/.
//
// Megatron-Core splits each pipeline stage's layers into v equal model chunks
// (num_layers_per_virtual_pipeline_stage must divide the stage's layers), and
// nothing else bounds v: NVIDIA's own recipes run 10 and 20 chunks a stage
// (Megatron-Bridge perf_recipes/llama/{gb200,gb300,b200}/llama3.py at 067f987df:
// Llama 3 70B at PP 8 × VP 10 and PP 2 × VP 20, one and two layers a chunk).
// So when pp divides the layers every divisor v ≥ 2 of a stage's layers is
// offered, down to one layer a chunk. When it does not, the stages are uneven
// already and ptsim splits the pp·v virtual stages as evenly as possible
// (Meta's Llama 3 405B: 126 layers over 16 stages); there v runs up to 8,
// each virtual stage keeping a layer.
#pragma once

#include <cstdint>
#include <vector>

namespace ptsim::plan::internal {

inline std::vector<std::int64_t> interleaving_depths(std::int64_t num_layers, std::int64_t pp) {
  std::vector<std::int64_t> depths;
  if (pp <= 1 || num_layers < 2 * pp) return depths;
  const bool even_stages = num_layers % pp == 0;
  const std::int64_t per_stage = num_layers / pp;
  const std::int64_t max_v = even_stages ? per_stage : 8;
  for (std::int64_t v = 2; v <= max_v && pp * v <= num_layers; ++v)
    if (!even_stages || per_stage % v == 0) depths.push_back(v);
  return depths;
}

}  // namespace ptsim::plan::internal

// Megatron-Core's --pipeline-model-parallel-layout: which layers each virtual
// pipeline stage holds, written as a string such as
// "Et*2|(t*2|)*34,t*3|(t*2|)*3,tL" (Megatron-Bridge's Llama 3 70B recipe).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptsim::config {

/// The layout's virtual stages in micro-batch order (virtual stage
/// chunk·pp + stage, as Megatron numbers them), each as its layer characters:
/// 'E' embedding, 't' transformer layer, 'L' loss (output layer), 'm' MTP
/// layer. Expanded as Megatron-Core expands it
/// (PipelineParallelLayerLayout.parse_str_to_list): commas are cosmetic and
/// dropped, then every "(...)*n" is unrolled, then every "x*n", then the
/// result is split at '|'. Throws ConfigError naming the character, its
/// position and what is allowed; `where` names the setting in messages (a
/// flag, or a file and key).
std::vector<std::string> expand_pipeline_layout(const std::string& layout,
                                                const std::string& where = "--pipeline-model-parallel-layout");

/// Transformer layers of each virtual stage of `layout` for a model of
/// `num_layers` layers on `pp` pipeline stages, checked as Megatron checks a
/// layout (embedding first, loss last, each exactly once, num_layers 't's,
/// stages a multiple of pp) and as ptsim needs it (a transformer layer in
/// every virtual stage but one holding the embedding or the loss; the model's `mtp_layers` MTP depths, m, with the loss
/// in the last virtual stage, where ptsim runs them). The model chunks per
/// stage (vpp) are the result's size / pp. Throws ConfigError with the rule
/// and the fix.
std::vector<std::int64_t> pipeline_layout_layers(const std::string& layout, std::int64_t num_layers, std::int64_t pp,
                                                 std::int64_t mtp_layers = 0,
                                                 const std::string& where = "--pipeline-model-parallel-layout");

}  // namespace ptsim::config

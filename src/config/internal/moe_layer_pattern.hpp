// Megatron-LM's --moe-layer-freq: which layers hold an MoE MLP.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptsim::config::internal {

/// The layers' pattern as Megatron-LM reads the flag (megatron/training/
/// arguments.py moe_freq_type; TransformerConfig.moe_layer_freq): an integer
/// N puts an MoE MLP in every N-th layer from the first (1: every layer); a
/// Python list expression — lists of 0 and 1 joined by +, repeated by * n,
/// grouped by parentheses, as "([0]*3+[1]*58)" or "([1]*3+[0])*3" — gives one
/// entry a layer, 1 for MoE. Throws ConfigError naming the flag, the text and
/// what was expected when the text is not such an expression, holds another
/// value than 0 or 1, or does not give `num_layers` entries.
std::vector<int> moe_layer_pattern(const std::string& text, std::int64_t num_layers);

/// The number of leading dense layers of a pattern that is dense layers and
/// then MoE layers only (ptsim's first_dense_layers); throws ConfigError for
/// a pattern that interleaves them, which ptsim does not simulate.
std::int64_t leading_dense_layers(const std::vector<int>& pattern, const std::string& text);

}  // namespace ptsim::config::internal

// What the Hugging Face family readers share (hf_config.cpp: the dispatch
// and the Llama-derived decoders; hf_classic_families.cpp: GPT-2, GPT-NeoX,
// BERT). Private to config/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "internal/object_reader.hpp"
#include "ptsim/model/model_spec.hpp"

namespace ptsim::config::internal {

inline constexpr std::int64_t kMaxDim = 1 << 20;
inline constexpr std::int64_t kMaxLayers = 100'000;
inline constexpr std::int64_t kMaxVocab = 100'000'000;
inline constexpr std::int64_t kMaxSeq = 1 << 24;
inline constexpr std::int64_t kMaxExperts = 1 << 16;  // routed experts per layer

/// The per-head width: `head_dim` when the config gives it, else hidden
/// size over heads, which must divide it (`heads_key` names the heads).
void set_heads(model::ModelSpec& m, ObjectReader& in, const std::string& heads_key,
               std::optional<std::int64_t> head_dim);

/// The LayerNorm and GeLU families, each as its config names its keys.
model::ModelSpec gpt2(ObjectReader& in);
model::ModelSpec gpt_neox(ObjectReader& in);
model::ModelSpec bert(ObjectReader& in);

}  // namespace ptsim::config::internal

// Per-rank parameter counts and their static memory (see stage_parameters.hpp).
#include "ptsim/workload/stage_parameters.hpp"

namespace ptsim::workload {

std::int64_t layer_parameters_per_rank(const model::ModelSpec& m, std::int64_t tp) {
  const std::int64_t h = m.hidden_size;
  const std::int64_t q = m.num_attention_heads * m.kv_channels;
  const std::int64_t kv = m.num_query_groups * m.kv_channels;
  const std::int64_t qkv = q + 2 * kv;
  const std::int64_t fc1 =
      m.activation == model::Activation::SwiGlu ? 2 * m.ffn_hidden_size : m.ffn_hidden_size;
  const std::int64_t split = h * qkv + q * h + h * fc1 + m.ffn_hidden_size * h +
                             (m.add_bias_linear ? qkv + fc1 : 0);
  const std::int64_t norm = m.normalization == model::Normalization::LayerNorm ? 2 * h : h;
  const std::int64_t replicated = 2 * norm + (m.add_bias_linear ? 2 * h : 0);
  return split / tp + replicated;
}

std::int64_t embedding_parameters_per_rank(const model::ModelSpec& m, std::int64_t tp) {
  std::int64_t p = m.vocab_size / tp * m.hidden_size;
  if (m.position_embedding == model::PositionEmbedding::LearnedAbsolute)
    p += m.seq_length * m.hidden_size;
  return p;
}

std::int64_t output_parameters_per_rank(const model::ModelSpec& m, std::int64_t tp,
                                        std::int64_t pp) {
  const std::int64_t h = m.hidden_size;
  const std::int64_t norm = m.normalization == model::Normalization::LayerNorm ? 2 * h : h;
  const bool own_head = !m.tie_embeddings || pp > 1;
  return norm + (own_head ? m.vocab_size / tp * h : 0);
}

StaticMemory static_memory(std::int64_t parameters) {
  const auto p = static_cast<std::uint64_t>(parameters);
  return {parameters, 2 * p, 2 * p, 12 * p};
}

}  // namespace ptsim::workload

// Parameter counts of a ModelSpec, layer by layer as Megatron-LM builds it.
#include "ptsim/model/model_spec.hpp"

namespace ptsim::model {

std::string to_string(Activation a) { return a == Activation::Gelu ? "gelu" : "swiglu"; }

std::string to_string(Normalization n) {
  return n == Normalization::LayerNorm ? "layernorm" : "rmsnorm";
}

std::string to_string(PositionEmbedding p) {
  switch (p) {
    case PositionEmbedding::LearnedAbsolute: return "learned_absolute";
    case PositionEmbedding::Rope: return "rope";
    case PositionEmbedding::None: return "none";
  }
  return "none";
}

namespace {
// A norm has a scale vector, and a bias vector too for LayerNorm.
std::int64_t norm_parameters(const ModelSpec& m) {
  return m.normalization == Normalization::LayerNorm ? 2 * m.hidden_size : m.hidden_size;
}
}  // namespace

std::int64_t parameters_per_layer(const ModelSpec& m) {
  const std::int64_t h = m.hidden_size;
  const std::int64_t q_width = m.num_attention_heads * m.kv_channels;
  const std::int64_t kv_width = m.num_query_groups * m.kv_channels;
  const std::int64_t qkv_out = q_width + 2 * kv_width;
  // SwiGLU's first projection produces gate and up halves: 2·ffn outputs.
  const std::int64_t fc1_out =
      m.activation == Activation::SwiGlu ? 2 * m.ffn_hidden_size : m.ffn_hidden_size;
  std::int64_t p = h * qkv_out + q_width * h + h * fc1_out + m.ffn_hidden_size * h;
  if (m.add_bias_linear) p += qkv_out + h + fc1_out + h;
  return p + 2 * norm_parameters(m);
}

std::int64_t embedding_parameters(const ModelSpec& m) {
  std::int64_t p = m.vocab_size * m.hidden_size;
  if (m.position_embedding == PositionEmbedding::LearnedAbsolute) p += m.seq_length * m.hidden_size;
  return p;
}

std::int64_t output_parameters(const ModelSpec& m) {
  const std::int64_t head = m.tie_embeddings ? 0 : m.vocab_size * m.hidden_size;
  return norm_parameters(m) + head;
}

std::int64_t total_parameters(const ModelSpec& m) {
  return m.num_layers * parameters_per_layer(m) + embedding_parameters(m) + output_parameters(m);
}

}  // namespace ptsim::model

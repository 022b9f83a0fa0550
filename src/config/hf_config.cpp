// Hugging Face config.json import (see internal/hf_config.hpp). A published
// config carries many keys that do not shape training (token ids, dtype,
// generation settings); only the ones below are read, by model family.
#include "internal/hf_config.hpp"

#include <fmt/format.h>

#include "internal/object_reader.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::config::internal {

namespace {

constexpr std::int64_t kMaxDim = 1 << 20;
constexpr std::int64_t kMaxLayers = 100'000;
constexpr std::int64_t kMaxVocab = 100'000'000;
constexpr std::int64_t kMaxSeq = 1 << 24;

void reject_moe(const nlohmann::json& object, const std::string& where) {
  for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts"})
    if (object.contains(key) && !object[key].is_null())
      throw ConfigError(fmt::format(
          "{}: /{} = {}: mixture-of-experts models are not simulated yet; use a dense model",
          where, key, show(object[key])));
}

void set_heads(model::ModelSpec& m, ObjectReader& in, const std::string& heads_key,
               std::optional<std::int64_t> head_dim) {
  if (!head_dim && m.hidden_size % m.num_attention_heads != 0)
    in.fail(heads_key, fmt::format("must divide hidden_size = {}", m.hidden_size));
  m.kv_channels = head_dim.value_or(m.hidden_size / m.num_attention_heads);
}

// Llama, Mistral, Qwen2: pre-norm RMSNorm, SwiGLU MLP, rotary positions, GQA.
model::ModelSpec llama_like(ObjectReader& in) {
  model::ModelSpec m;
  m.num_layers = in.integer("num_hidden_layers", 1, kMaxLayers);
  m.hidden_size = in.integer("hidden_size", 1, kMaxDim);
  m.num_attention_heads = in.integer("num_attention_heads", 1, kMaxDim);
  m.num_query_groups =
      in.optional_integer("num_key_value_heads", 1, kMaxDim).value_or(m.num_attention_heads);
  m.ffn_hidden_size = in.integer("intermediate_size", 1, kMaxDim * 8);
  m.vocab_size = in.integer("vocab_size", 1, kMaxVocab);
  set_heads(m, in, "num_attention_heads", in.optional_integer("head_dim", 1, kMaxDim));
  // Long-context variants stretch RoPE beyond the pre-training length, which
  // rope_scaling records; the pre-training length is the one a step trains at.
  m.seq_length = in.integer("max_position_embeddings", 1, kMaxSeq);
  if (in.has("rope_scaling")) {
    ObjectReader scaling = in.object("rope_scaling");
    if (const auto original =
            scaling.optional_integer("original_max_position_embeddings", 1, kMaxSeq))
      m.seq_length = *original;
  }
  in.choice("hidden_act", {"silu", "swish"});  // SwiGLU's gate activation
  m.activation = model::Activation::SwiGlu;
  m.normalization = model::Normalization::RmsNorm;
  m.position_embedding = model::PositionEmbedding::Rope;
  m.tie_embeddings = in.optional_boolean("tie_word_embeddings").value_or(false);
  m.add_bias_linear = in.optional_boolean("mlp_bias").value_or(false);
  m.dropout = in.optional_number("attention_dropout", 0.0, 0.99).value_or(0.0);
  return m;
}

model::ModelSpec gpt2(ObjectReader& in) {
  model::ModelSpec m;
  m.num_layers = in.integer("n_layer", 1, kMaxLayers);
  m.hidden_size = in.integer("n_embd", 1, kMaxDim);
  m.num_attention_heads = in.integer("n_head", 1, kMaxDim);
  m.num_query_groups = m.num_attention_heads;
  m.ffn_hidden_size = in.optional_integer("n_inner", 1, kMaxDim * 8).value_or(4 * m.hidden_size);
  m.vocab_size = in.integer("vocab_size", 1, kMaxVocab);
  m.seq_length = in.integer("n_positions", 1, kMaxSeq);
  set_heads(m, in, "n_head", std::nullopt);
  in.optional_choice("activation_function", {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh"});
  m.activation = model::Activation::Gelu;
  m.normalization = model::Normalization::LayerNorm;
  m.position_embedding = model::PositionEmbedding::LearnedAbsolute;
  m.tie_embeddings = in.optional_boolean("tie_word_embeddings").value_or(true);
  m.dropout = in.optional_number("resid_pdrop", 0.0, 0.99).value_or(0.1);
  return m;
}

// GPT-NeoX (Pythia): LayerNorm, GeLU, rotary. Its parallel residual puts
// attention and MLP side by side; the FLOPs and saved tensors are the same
// as the sequential layer simulated here.
model::ModelSpec gpt_neox(ObjectReader& in) {
  model::ModelSpec m;
  m.num_layers = in.integer("num_hidden_layers", 1, kMaxLayers);
  m.hidden_size = in.integer("hidden_size", 1, kMaxDim);
  m.num_attention_heads = in.integer("num_attention_heads", 1, kMaxDim);
  m.num_query_groups = m.num_attention_heads;
  m.ffn_hidden_size = in.integer("intermediate_size", 1, kMaxDim * 8);
  m.vocab_size = in.integer("vocab_size", 1, kMaxVocab);
  m.seq_length = in.integer("max_position_embeddings", 1, kMaxSeq);
  set_heads(m, in, "num_attention_heads", std::nullopt);
  in.optional_choice("hidden_act", {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh"});
  m.activation = model::Activation::Gelu;
  m.normalization = model::Normalization::LayerNorm;
  m.position_embedding = model::PositionEmbedding::Rope;
  m.tie_embeddings = in.optional_boolean("tie_word_embeddings").value_or(false);
  m.dropout = in.optional_number("hidden_dropout", 0.0, 0.99).value_or(0.0);
  return m;
}

model::ModelSpec bert(ObjectReader& in) {
  model::ModelSpec m;
  m.num_layers = in.integer("num_hidden_layers", 1, kMaxLayers);
  m.hidden_size = in.integer("hidden_size", 1, kMaxDim);
  m.num_attention_heads = in.integer("num_attention_heads", 1, kMaxDim);
  m.num_query_groups = m.num_attention_heads;
  m.ffn_hidden_size = in.integer("intermediate_size", 1, kMaxDim * 8);
  m.vocab_size = in.integer("vocab_size", 1, kMaxVocab);
  m.seq_length = in.integer("max_position_embeddings", 1, kMaxSeq);
  set_heads(m, in, "num_attention_heads", std::nullopt);
  in.optional_choice("hidden_act", {"gelu", "gelu_new"});
  m.activation = model::Activation::Gelu;
  m.normalization = model::Normalization::LayerNorm;
  m.position_embedding = model::PositionEmbedding::LearnedAbsolute;
  m.tie_embeddings = true;  // the masked-LM decoder shares the word embeddings
  m.causal = false;         // an encoder: every token attends to every other
  m.dropout = in.optional_number("hidden_dropout_prob", 0.0, 0.99).value_or(0.1);
  return m;
}

}  // namespace

bool is_hf_config(const nlohmann::json& object) {
  return object.is_object() && (object.contains("model_type") || object.contains("architectures"));
}

model::ModelSpec parse_hf_config(const nlohmann::json& object, const std::string& where,
                                 const std::string& fallback_name) {
  ObjectReader in(object, where);
  if (!in.has("model_type"))
    in.fail("model_type", "is missing: a Hugging Face config names its model_type "
                          "(llama, mistral, qwen2, gpt2, gpt_neox or bert)");
  reject_moe(object, where);
  const std::string type =
      in.choice("model_type", {"llama", "mistral", "qwen2", "gpt2", "gpt_neox", "bert"});
  model::ModelSpec m;
  if (type == "gpt2") {
    m = gpt2(in);
  } else if (type == "gpt_neox") {
    m = gpt_neox(in);
  } else if (type == "bert") {
    m = bert(in);
  } else {
    m = llama_like(in);
  }
  m.name = fallback_name;
  return m;
}

}  // namespace ptsim::config::internal

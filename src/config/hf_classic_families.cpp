// Hugging Face configs of the LayerNorm and GeLU families: GPT-2, GPT-NeoX
// (Pythia) and BERT (see internal/hf_families.hpp).
#include "internal/hf_families.hpp"

namespace ptsim::config::internal {

model::ModelSpec gpt2(ObjectReader& in) {
  model::ModelSpec m;
  m.num_layers = in.integer("n_layer", 1, kMaxLayers);
  m.hidden_size = in.integer("n_embd", 1, kMaxDim);
  m.num_attention_heads = in.integer("n_head", 1, kMaxDim);
  m.num_query_groups = m.num_attention_heads;
  m.ffn_hidden_size = in.optional_integer("n_inner", 1, kMaxDim * 8).value_or(4 * m.hidden_size);
  m.vocab_size = in.integer("vocab_size", 1, kMaxVocab);
  m.seq_length = in.integer("n_positions", 1, kMaxSeq);
  m.seq_length_from = "n_positions";
  set_heads(m, in, "n_head", std::nullopt);
  in.optional_choice("activation_function", {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh"});
  m.activation = model::Activation::Gelu;
  m.normalization = model::Normalization::LayerNorm;
  m.position_embedding = model::PositionEmbedding::LearnedAbsolute;
  m.tie_embeddings = in.optional_boolean("tie_word_embeddings").value_or(true);
  m.dropout = in.optional_number("resid_pdrop", 0.0, 0.99).value_or(0.1);
  return m;
}

namespace {

// What GPT-NeoX's and BERT's configs share: the Llama-style key names for a
// LayerNorm, GeLU transformer with full key/value heads.
model::ModelSpec layernorm_gelu(ObjectReader& in) {
  model::ModelSpec m;
  m.num_layers = in.integer("num_hidden_layers", 1, kMaxLayers);
  m.hidden_size = in.integer("hidden_size", 1, kMaxDim);
  m.num_attention_heads = in.integer("num_attention_heads", 1, kMaxDim);
  m.num_query_groups = m.num_attention_heads;
  m.ffn_hidden_size = in.integer("intermediate_size", 1, kMaxDim * 8);
  m.vocab_size = in.integer("vocab_size", 1, kMaxVocab);
  m.seq_length = in.integer("max_position_embeddings", 1, kMaxSeq);
  m.seq_length_from = "max_position_embeddings";
  set_heads(m, in, "num_attention_heads", std::nullopt);
  m.activation = model::Activation::Gelu;
  m.normalization = model::Normalization::LayerNorm;
  return m;
}

}  // namespace

// GPT-NeoX (Pythia): LayerNorm, GeLU, rotary. Its parallel residual puts
// attention and MLP side by side; the FLOPs and saved tensors are the same
// as the sequential layer simulated here.
model::ModelSpec gpt_neox(ObjectReader& in) {
  model::ModelSpec m = layernorm_gelu(in);
  in.optional_choice("hidden_act", {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh"});
  m.position_embedding = model::PositionEmbedding::Rope;
  m.tie_embeddings = in.optional_boolean("tie_word_embeddings").value_or(false);
  m.dropout = in.optional_number("hidden_dropout", 0.0, 0.99).value_or(0.0);
  return m;
}

model::ModelSpec bert(ObjectReader& in) {
  model::ModelSpec m = layernorm_gelu(in);
  in.optional_choice("hidden_act", {"gelu", "gelu_new"});
  m.position_embedding = model::PositionEmbedding::LearnedAbsolute;
  m.tie_embeddings = true;  // the masked-LM decoder shares the word embeddings
  m.causal = false;         // an encoder: every token attends to every other
  m.dropout = in.optional_number("hidden_dropout_prob", 0.0, 0.99).value_or(0.1);
  return m;
}

}  // namespace ptsim::config::internal

// ModelSpec: what is trained — the dimensions of a GPT/Llama/BERT-style
// transformer, with Megatron-LM's names. Input stage of the flow; no JSON here.
#pragma once

#include <cstdint>
#include <string>

namespace ptsim::model {

enum class Activation { Gelu, SwiGlu };
enum class Normalization { LayerNorm, RmsNorm };
enum class PositionEmbedding { LearnedAbsolute, Rope, None };

struct ModelSpec {
  std::string name;                 // human-readable, e.g. "GPT-3 175B"
  std::int64_t num_layers = 0;
  std::int64_t hidden_size = 0;     // h
  std::int64_t num_attention_heads = 0;  // a
  std::int64_t num_query_groups = 0;     // key/value heads (GQA); = a without GQA
  std::int64_t kv_channels = 0;     // per-head dimension; h / a unless set
  std::int64_t ffn_hidden_size = 0; // 4h for GPT
  std::int64_t vocab_size = 0;      // V, padded as the framework pads it
  std::int64_t seq_length = 0;      // s
  Activation activation = Activation::Gelu;
  Normalization normalization = Normalization::LayerNorm;
  PositionEmbedding position_embedding = PositionEmbedding::LearnedAbsolute;
  bool tie_embeddings = true;       // LM head shares the input embedding matrix
  bool add_bias_linear = true;      // linear layers carry biases (GPT yes, Llama no)
  double dropout = 0.1;             // hidden and attention dropout probability
  bool causal = true;               // decoder (causal) attention; false for encoders (BERT)
};

std::string to_string(Activation a);
std::string to_string(Normalization n);
std::string to_string(PositionEmbedding p);

/// Parameters of one transformer layer (attention + MLP + norms, biases when enabled).
std::int64_t parameters_per_layer(const ModelSpec& m);
/// Parameters of the input embedding (word + learned positions).
std::int64_t embedding_parameters(const ModelSpec& m);
/// Parameters of the output layer (final norm + LM head unless tied).
std::int64_t output_parameters(const ModelSpec& m);
/// All parameters of the model.
std::int64_t total_parameters(const ModelSpec& m);

}  // namespace ptsim::model

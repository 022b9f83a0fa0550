// Model files in ptsim's Megatron-style format, and dispatch to the Hugging
// Face importer (see load_model.hpp).
#include "ptsim/config/load_model.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "internal/hf_config.hpp"
#include "internal/object_reader.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::config {

namespace {

constexpr std::int64_t kMaxDim = 1 << 20;       // hidden, ffn, heads: beyond any real model
constexpr std::int64_t kMaxLayers = 100'000;
constexpr std::int64_t kMaxVocab = 100'000'000;
constexpr std::int64_t kMaxSeq = 1 << 24;

model::ModelSpec parse_megatron(const nlohmann::json& object, const std::string& where,
                                const std::string& fallback_name) {
  internal::ObjectReader in(object, where);
  model::ModelSpec m;
  m.name = in.optional_string("name").value_or(fallback_name);
  in.skip("source");  // provenance, for people
  m.num_layers = in.integer("num_layers", 1, kMaxLayers);
  m.hidden_size = in.integer("hidden_size", 1, kMaxDim);
  m.num_attention_heads = in.integer("num_attention_heads", 1, kMaxDim);
  m.num_query_groups =
      in.optional_integer("num_query_groups", 1, kMaxDim).value_or(m.num_attention_heads);
  m.ffn_hidden_size =
      in.optional_integer("ffn_hidden_size", 1, kMaxDim * 8).value_or(4 * m.hidden_size);
  m.vocab_size = in.integer("vocab_size", 1, kMaxVocab);
  m.seq_length = in.integer("seq_length", 1, kMaxSeq);
  const auto kv = in.optional_integer("kv_channels", 1, kMaxDim);
  if (!kv && m.hidden_size % m.num_attention_heads != 0)
    in.fail("num_attention_heads", fmt::format("must divide hidden_size = {} (or give "
                                               "kv_channels, the per-head width)",
                                               m.hidden_size));
  m.kv_channels = kv.value_or(m.hidden_size / m.num_attention_heads);
  m.activation = in.optional_choice("activation", {"gelu", "swiglu"}).value_or("gelu") == "gelu"
                     ? model::Activation::Gelu
                     : model::Activation::SwiGlu;
  m.normalization =
      in.optional_choice("normalization", {"layernorm", "rmsnorm"}).value_or("layernorm") ==
              "layernorm"
          ? model::Normalization::LayerNorm
          : model::Normalization::RmsNorm;
  const std::string pos =
      in.optional_choice("position_embedding_type", {"learned_absolute", "rope", "none"})
          .value_or("learned_absolute");
  m.position_embedding = pos == "learned_absolute" ? model::PositionEmbedding::LearnedAbsolute
                         : pos == "rope"           ? model::PositionEmbedding::Rope
                                                   : model::PositionEmbedding::None;
  m.tie_embeddings = in.optional_boolean("tie_embeddings").value_or(true);
  m.add_bias_linear = in.optional_boolean("add_bias_linear").value_or(true);
  m.dropout = in.optional_number("dropout", 0.0, 0.99).value_or(0.1);
  m.causal = in.optional_boolean("causal").value_or(true);
  in.reject_unknown_keys(
      "accepted keys: name, source, num_layers, hidden_size, num_attention_heads, "
      "num_query_groups, ffn_hidden_size, kv_channels, vocab_size, seq_length, activation, "
      "normalization, position_embedding_type, tie_embeddings, add_bias_linear, dropout, causal");
  return m;
}

}  // namespace

void validate_model(const model::ModelSpec& m, const std::string& where) {
  if (m.num_attention_heads % m.num_query_groups != 0)
    throw ConfigError(fmt::format(
        "{}: num_query_groups = {} must divide num_attention_heads = {} (each key/value group "
        "serves a whole number of query heads)",
        where, m.num_query_groups, m.num_attention_heads));
}

model::ModelSpec parse_model(const nlohmann::json& object, const std::string& where,
                             const std::string& fallback_name) {
  model::ModelSpec m = internal::is_hf_config(object)
                           ? internal::parse_hf_config(object, where, fallback_name)
                           : parse_megatron(object, where, fallback_name);
  validate_model(m, where);
  return m;
}

model::ModelSpec load_model(const std::string& path) {
  const nlohmann::json object = internal::read_json_file(path);
  return parse_model(object, path, std::filesystem::path(path).stem().string());
}

}  // namespace ptsim::config

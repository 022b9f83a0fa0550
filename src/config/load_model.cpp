// Model files in ptsim's Megatron-style format, and dispatch to the Hugging
// Face importer (see load_model.hpp).
#include "ptsim/config/load_model.hpp"

#include <algorithm>
#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <span>
#include <vector>

#include "internal/hf_config.hpp"
#include "internal/object_reader.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::config {

namespace {

constexpr std::int64_t kMaxDim = 1 << 20;       // hidden, ffn, heads: beyond any real model
constexpr std::int64_t kMaxLayers = 100'000;
constexpr std::int64_t kMaxVocab = 100'000'000;
constexpr std::int64_t kMaxSeq = 1 << 24;
constexpr std::int64_t kMaxExperts = 1 << 16;   // routed experts per layer
constexpr double kMaxParameters = 1e15;          // the whole model: see validate_model

// `sliding_window_layers`: one entry per layer, 0/1 or false/true.
std::vector<std::uint8_t> read_layer_flags(internal::ObjectReader& in, const std::string& key,
                                           std::int64_t num_layers) {
  const nlohmann::json& flags = in.array(key);
  if (static_cast<std::int64_t>(flags.size()) != num_layers)
    in.fail(key, fmt::format("has {} entries; it must have exactly num_layers = {} (one 0/1 "
                             "flag per layer)",
                             flags.size(), num_layers));
  std::vector<std::uint8_t> out;
  out.reserve(flags.size());
  for (const nlohmann::json& flag : flags) {
    if (flag.is_boolean()) {
      out.push_back(flag.get<bool>() ? 1 : 0);
    } else if (flag.is_number_integer() && (flag.get<std::int64_t>() == 0 ||
                                            flag.get<std::int64_t>() == 1)) {
      out.push_back(static_cast<std::uint8_t>(flag.get<std::int64_t>()));
    } else {
      in.fail(key, fmt::format("has the entry {}; each entry must be 0, 1, false or true "
                               "(1: the layer uses sliding-window attention)",
                               internal::show(flag)));
    }
  }
  return out;
}

// Keys that apply only to a kind of model this one is not: refused when
// given (`why` says what they need), skipped when null (as if absent).
void refuse_keys(internal::ObjectReader& in, std::span<const char* const> keys, const char* why) {
  for (const char* key : keys) {
    if (in.has(key)) in.fail(key, why);
    in.skip(key);
  }
}

// Sliding-window attention and query/key norms.
void parse_attention_variants(internal::ObjectReader& in, model::ModelSpec& m) {
  m.qk_layernorm = in.optional_boolean("qk_layernorm").value_or(false);
  m.attn_logit_softcapping = in.optional_number("attn_logit_softcapping", 0.0, 1e6).value_or(0.0);
  m.final_logit_softcapping = in.optional_number("final_logit_softcapping", 0.0, 1e6).value_or(0.0);
  m.sliding_window = in.optional_integer("sliding_window", 0, kMaxSeq).value_or(0);
  in.skip("sliding_window_layers");  // null: as if absent
  if (in.has("sliding_window_layers")) {
    if (m.sliding_window == 0)
      in.fail("sliding_window_layers",
              "needs sliding_window > 0 (the window, in tokens, of the flagged layers); give "
              "sliding_window or remove sliding_window_layers");
    m.sliding_window_layers = read_layer_flags(in, "sliding_window_layers", m.num_layers);
  } else if (m.sliding_window > 0) {
    // Megatron-LM's --window-size: every layer attends within the window.
    m.sliding_window_layers.assign(static_cast<std::size_t>(m.num_layers), 1);
  }
}

// Multi-head latent attention, with Megatron-Core's names.
void parse_latent_attention(internal::ObjectReader& in, model::ModelSpec& m) {
  constexpr const char* kKeys[] = {"q_lora_rank", "kv_lora_rank", "qk_head_dim",
                                   "qk_pos_emb_head_dim", "v_head_dim"};
  // DeepSeek-V4's compressed attention has a query rank and a RoPE part too.
  constexpr const char* kLatentOnly[] = {"kv_lora_rank", "qk_head_dim", "v_head_dim"};
  m.multi_latent_attention = in.optional_boolean("multi_latent_attention").value_or(false);
  if (!m.multi_latent_attention) {
    const bool compressed = m.has_compressed_attention() || in.has("csa_compress_ratios");
    refuse_keys(in, compressed ? std::span<const char* const>(kLatentOnly) : std::span<const char* const>(kKeys),
                "applies only to multi-head latent attention; set multi_latent_attention = true or remove the key");
    return;
  }
  m.q_lora_rank = in.optional_integer("q_lora_rank", 0, kMaxDim).value_or(0);
  const auto required = [&](const char* key, const char* what) {
    if (!in.has(key))
      in.fail(key, fmt::format("is missing; multi_latent_attention needs it > 0 ({})", what));
    return in.integer(key, 1, kMaxDim);
  };
  m.kv_lora_rank = required("kv_lora_rank", "the compressed key/value width, 512 in DeepSeek-V3");
  m.qk_head_dim = required("qk_head_dim", "the per-head query/key width without RoPE, 128 in "
                                          "DeepSeek-V3");
  m.qk_pos_emb_head_dim =
      required("qk_pos_emb_head_dim", "the per-head RoPE width, 64 in DeepSeek-V3");
  m.v_head_dim = required("v_head_dim", "the per-head value width, 128 in DeepSeek-V3");
  if (m.qk_layernorm)
    in.fail("qk_layernorm", "cannot be combined with multi_latent_attention, which already "
                            "normalises its query and key/value latents; remove qk_layernorm");
  if (m.num_query_groups != m.num_attention_heads)
    in.fail("num_query_groups", fmt::format("must equal num_attention_heads = {} with "
                                            "multi_latent_attention (MLA has no key/value "
                                            "groups); remove num_query_groups",
                                            m.num_attention_heads));
}

// DeepSeek-V4's attention and hyper-connections, with Megatron-Core's names
// (the ratios are read once mtp_num_layers is known: read_compress_ratios).
void parse_compressed_attention(internal::ObjectReader& in, model::ModelSpec& m) {
  constexpr const char* kKeys[] = {"csa_window_size", "dsa_indexer_n_heads", "dsa_indexer_head_dim", "dsa_indexer_topk",
                                   "o_groups",        "o_lora_rank"};
  m.mhc_num_residual_streams = in.optional_integer("mhc_num_residual_streams", 1, 64).value_or(1);
  m.mhc_sinkhorn_iterations = in.optional_integer("mhc_sinkhorn_iterations", 0, 1000).value_or(0);
  m.moe_n_hash_layers = in.optional_integer("moe_n_hash_layers", 0, kMaxLayers).value_or(0);
  in.skip("csa_compress_ratios");  // null: as if absent
  if (!in.has("csa_compress_ratios")) {
    refuse_keys(in, kKeys,
                "applies only to DeepSeek-V4's compressed attention; give csa_compress_ratios (one ratio a layer "
                "and an MTP depth: 0, 4 or 128) or remove the key");
    return;
  }
  const auto required = [&](const char* key, const char* what) {
    if (!in.has(key)) in.fail(key, fmt::format("is missing; csa_compress_ratios needs it > 0 ({})", what));
    return in.integer(key, 1, kMaxDim);
  };
  m.csa_window_size = required("csa_window_size", "the sliding window every query attends to, 128 in DeepSeek-V4");
  m.q_lora_rank = required("q_lora_rank", "the query down-projection rank, 1024 in DeepSeek-V4-Flash");
  m.qk_pos_emb_head_dim = required("qk_pos_emb_head_dim", "the RoPE part of a head, 64 in DeepSeek-V4");
  m.o_groups = required("o_groups", "the output projection's groups, 8 in DeepSeek-V4-Flash");
  m.o_lora_rank = required("o_lora_rank", "each group's rank, 1024 in DeepSeek-V4-Flash");
  m.dsa_indexer_n_heads = in.optional_integer("dsa_indexer_n_heads", 1, kMaxDim).value_or(0);
  m.dsa_indexer_head_dim = in.optional_integer("dsa_indexer_head_dim", 1, kMaxDim).value_or(0);
  m.dsa_indexer_topk = in.optional_integer("dsa_indexer_topk", 1, kMaxSeq).value_or(0);
}

// csa_compress_ratios: one a layer, then one an MTP depth.
void read_compress_ratios(internal::ObjectReader& in, model::ModelSpec& m) {
  if (!in.has("csa_compress_ratios")) return;
  const nlohmann::json& ratios = in.array("csa_compress_ratios");
  const std::int64_t expected = m.num_layers + m.mtp_num_layers;
  if (static_cast<std::int64_t>(ratios.size()) != expected)
    in.fail("csa_compress_ratios", fmt::format("has {} entries; it needs num_layers + mtp_num_layers = {} (one "
                                               "ratio a layer, then one an MTP depth)",
                                               ratios.size(), expected));
  for (const nlohmann::json& r : ratios) {
    if (!r.is_number_integer() || r.get<std::int64_t>() < 0 || r.get<std::int64_t>() > kMaxSeq)
      in.fail("csa_compress_ratios", fmt::format("has the entry {}; each must be an integer ratio ≥ 0 (0: the "
                                                 "window only, 4: compressed sparse, 128: heavily compressed)",
                                                 internal::show(r)));
    m.csa_compress_ratios.push_back(r.get<std::int64_t>());
  }
}

// Mixture of experts, with Megatron-LM's names.
void parse_moe(internal::ObjectReader& in, model::ModelSpec& m) {
  constexpr const char* kKeys[] = {"moe_router_topk", "moe_ffn_hidden_size", "moe_shared_expert_intermediate_size",
                                   "first_dense_layers", "moe_latent_size"};
  m.num_moe_experts = in.optional_integer("num_moe_experts", 0, kMaxExperts).value_or(0);
  if (m.num_moe_experts == 0) {
    refuse_keys(in, kKeys, "applies only to mixture-of-experts models; set num_moe_experts > 0 or remove the key");
    return;
  }
  if (!in.has("moe_router_topk"))
    in.fail("moe_router_topk", fmt::format("is missing; it is required when num_moe_experts = {} "
                                           "(the routed experts per token, in [1, {}])",
                                           m.num_moe_experts, m.num_moe_experts));
  m.moe_router_topk = in.integer("moe_router_topk", 0, kMaxExperts);
  if (m.moe_router_topk < 1 || m.moe_router_topk > m.num_moe_experts)
    in.fail("moe_router_topk", fmt::format("must be in [1, num_moe_experts = {}]: a token is "
                                           "routed to at least one and at most every expert; "
                                           "lower moe_router_topk or raise num_moe_experts",
                                           m.num_moe_experts));
  if (!in.has("moe_ffn_hidden_size"))
    in.fail("moe_ffn_hidden_size", fmt::format("is missing; it is required when "
                                               "num_moe_experts = {} (the width of one routed "
                                               "expert's MLP)",
                                               m.num_moe_experts));
  m.moe_ffn_hidden_size = in.integer("moe_ffn_hidden_size", 1, kMaxDim * 8);
  m.moe_shared_expert_intermediate_size =
      in.optional_integer("moe_shared_expert_intermediate_size", 0, kMaxDim * 8).value_or(0);
  m.moe_latent_size = in.optional_integer("moe_latent_size", 1, kMaxDim).value_or(0);
  m.first_dense_layers = in.optional_integer("first_dense_layers", 0, kMaxLayers).value_or(0);
  if (m.first_dense_layers >= m.num_layers)
    in.fail("first_dense_layers", fmt::format("must be less than num_layers = {} (at least one "
                                              "layer must be an MoE layer); lower it or set "
                                              "num_moe_experts = 0 for a dense model",
                                              m.num_layers));
}

// A hybrid model (Megatron-Core's hybrid stack), with Megatron's names: the
// layer pattern and the Mamba-2 mixer's sizes (TransformerConfig's defaults:
// head dim 64, state 128, 8 groups, heads 2h / head dim).
void parse_hybrid(internal::ObjectReader& in, model::ModelSpec& m) {
  constexpr const char* kKeys[] = {"mamba_num_heads", "mamba_head_dim", "mamba_state_dim", "mamba_num_groups",
                                   "mamba_chunk_size"};
  const std::optional<std::string> unified = in.optional_string("hybrid_layer_pattern");
  if (!unified) {
    refuse_keys(in, kKeys,
                "applies only to hybrid models; give hybrid_layer_pattern (one symbol a layer: M, *, - or E) "
                "or remove the key");
    return;
  }
  // Megatron's unified pattern: the main layers, then one segment a
  // multi-token-prediction depth after each '/', every depth alike.
  const std::size_t slash = unified->find('/');
  const std::string pattern = unified->substr(0, slash);
  if (static_cast<std::int64_t>(pattern.size()) != m.num_layers)
    in.fail("hybrid_layer_pattern", fmt::format("has {} symbols before any '/'; it needs exactly num_layers = {} "
                                                "(one a layer; pipeline separators ('|') are not read: give the "
                                                "stages with --pipeline-model-parallel-layout)",
                                                pattern.size(), m.num_layers));
  const std::size_t bad = unified->find_first_not_of("M*-E/");
  if (bad != std::string::npos)
    in.fail("hybrid_layer_pattern", fmt::format("has '{}' at position {}; each symbol must be M (Mamba-2 mixer), "
                                                "* (self-attention), - (dense MLP) or E (MoE MLP), and '/' "
                                                "begins a multi-token-prediction depth",
                                                (*unified)[bad], bad));
  m.mtp_num_layers = 0;
  for (std::size_t at = slash; at != std::string::npos;) {
    const std::size_t next = unified->find('/', at + 1);
    const std::string depth = unified->substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    if (depth.empty() || (m.mtp_num_layers > 0 && depth != m.mtp_layer_pattern))
      in.fail("hybrid_layer_pattern",
              fmt::format("has the MTP depth '{}'{}; every depth after '/' needs the same layers (e.g. "
                          "\"MEME*E/*E/*E\": two depths of attention and MoE)",
                          depth, depth.empty() ? " (empty)" : fmt::format(" after '{}'", m.mtp_layer_pattern)));
    m.mtp_layer_pattern = depth;
    ++m.mtp_num_layers;
    at = next;
  }
  const bool moe_layers = pattern.find('E') != std::string::npos;
  if (moe_layers != m.is_moe())
    in.fail("hybrid_layer_pattern", moe_layers ? "has MoE layers (E) but num_moe_experts is 0; give the experts"
                                               : "has no MoE layer (E) but num_moe_experts > 0; mark the MoE "
                                                 "layers E or set num_moe_experts to 0");
  if (m.first_dense_layers > 0)
    in.fail("first_dense_layers",
            "does not apply to hybrid models: the pattern says which layers are MoE (E) "
            "and which dense (-); remove it");
  m.hybrid_layer_pattern = pattern;
  m.mamba_head_dim = in.optional_integer("mamba_head_dim", 1, kMaxDim).value_or(64);
  m.mamba_state_dim = in.optional_integer("mamba_state_dim", 1, kMaxDim).value_or(128);
  m.mamba_num_groups = in.optional_integer("mamba_num_groups", 1, kMaxDim).value_or(8);
  m.mamba_chunk_size = in.optional_integer("mamba_chunk_size", 1, kMaxDim).value_or(128);
  const auto heads = in.optional_integer("mamba_num_heads", 1, kMaxDim);
  if (!heads && (2 * m.hidden_size) % m.mamba_head_dim != 0)
    in.fail("mamba_head_dim", fmt::format("must divide 2 · hidden_size = {} when mamba_num_heads is not given "
                                          "(Megatron then takes 2h / mamba_head_dim heads); give mamba_num_heads",
                                          2 * m.hidden_size));
  m.mamba_num_heads = heads.value_or(2 * m.hidden_size / m.mamba_head_dim);
  if (m.mamba_num_heads % m.mamba_num_groups != 0)
    in.fail("mamba_num_groups", fmt::format("must divide mamba_num_heads = {} (each group's B and C serve a "
                                            "whole number of heads)",
                                            m.mamba_num_heads));
}

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
  parse_attention_variants(in, m);
  parse_compressed_attention(in, m);
  parse_latent_attention(in, m);
  parse_moe(in, m);
  parse_hybrid(in, m);
  const auto kv = in.optional_integer("kv_channels", 1, kMaxDim);
  if (m.multi_latent_attention) {
    // The width of the score product q·k: the no-RoPE part plus the RoPE part.
    const std::int64_t qk_width = m.qk_head_dim + m.qk_pos_emb_head_dim;
    if (kv && *kv != qk_width)
      in.fail("kv_channels", fmt::format("must equal qk_head_dim + qk_pos_emb_head_dim = {} with "
                                         "multi_latent_attention; remove kv_channels",
                                         qk_width));
    m.kv_channels = qk_width;
  } else {
    if (!kv && m.hidden_size % m.num_attention_heads != 0)
      in.fail("num_attention_heads", fmt::format("must divide hidden_size = {} (or give "
                                                 "kv_channels, the per-head width)",
                                                 m.hidden_size));
    m.kv_channels = kv.value_or(m.hidden_size / m.num_attention_heads);
  }
  const std::string activation =
      in.optional_choice("activation", {"gelu", "swiglu", "geglu", "squared-relu"}).value_or("gelu");
  m.activation = activation == "gelu"           ? model::Activation::Gelu
                 : activation == "swiglu"       ? model::Activation::SwiGlu
                 : activation == "squared-relu" ? model::Activation::SquaredRelu
                                                : model::Activation::GeGlu;
  m.post_sublayer_norms = in.optional_boolean("post_sublayer_norms").value_or(false);
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
  m.add_qkv_bias = in.optional_boolean("add_qkv_bias").value_or(false);
  m.dropout = in.optional_number("dropout", 0.0, 0.99).value_or(0.1);
  m.causal = in.optional_boolean("causal").value_or(true);
  const std::int64_t pattern_depths = m.mtp_num_layers;  // a hybrid pattern's '/' segments
  m.mtp_num_layers = in.optional_integer("mtp_num_layers", 0, kMaxLayers).value_or(pattern_depths);
  if (m.is_hybrid() && m.mtp_num_layers != pattern_depths)
    in.fail("mtp_num_layers",
            pattern_depths > 0
                ? fmt::format("= {} disagrees with hybrid_layer_pattern's {} MTP depths (segments after '/'); "
                              "remove mtp_num_layers or make them agree",
                              m.mtp_num_layers, pattern_depths)
                : std::string("needs the depths' layers in a hybrid model: append one segment a depth to "
                              "hybrid_layer_pattern after '/' (Megatron's unified pattern, e.g. \"MEME*E/*E/*E\")"));
  read_compress_ratios(in, m);
  m.mtp_use_repeated_layer = in.optional_boolean("mtp_use_repeated_layer").value_or(false);
  if (m.mtp_use_repeated_layer && m.mtp_num_layers == 0)
    in.fail("mtp_use_repeated_layer", "applies only to models with multi-token prediction (mtp_num_layers > 0)");
  in.reject_unknown_keys(
      "accepted keys: name, source, num_layers, hidden_size, num_attention_heads, "
      "num_query_groups, ffn_hidden_size, kv_channels, vocab_size, seq_length, activation, "
      "normalization, post_sublayer_norms, position_embedding_type, tie_embeddings, add_bias_linear, "
      "add_qkv_bias, dropout, causal, qk_layernorm, attn_logit_softcapping, final_logit_softcapping, sliding_window, "
      "sliding_window_layers, multi_latent_attention, q_lora_rank, "
      "kv_lora_rank, qk_head_dim, qk_pos_emb_head_dim, v_head_dim, num_moe_experts, "
      "moe_router_topk, moe_ffn_hidden_size, moe_shared_expert_intermediate_size, "
      "first_dense_layers, moe_latent_size, mtp_num_layers, mtp_use_repeated_layer, hybrid_layer_pattern, "
      "mamba_num_heads, mamba_head_dim, mamba_state_dim, mamba_num_groups, mamba_chunk_size, csa_compress_ratios, "
      "csa_window_size, "
      "dsa_indexer_n_heads, dsa_indexer_head_dim, dsa_indexer_topk, o_groups, o_lora_rank, "
      "mhc_num_residual_streams, mhc_sinkhorn_iterations, moe_n_hash_layers");
  return m;
}

// A hybrid model's rules in ModelSpec's names (both formats reach here),
// and what ptsim does not build in one: sliding windows, post-sublayer norms
// and MTP depths (Megatron's hybrid MTP takes a pattern of its own).
void validate_hybrid(const model::ModelSpec& m, const std::string& where) {
  const std::string& p = m.hybrid_layer_pattern;
  if (static_cast<std::int64_t>(p.size()) != m.num_layers || p.find_first_not_of("M*-E") != std::string::npos)
    throw ConfigError(fmt::format("{}: the hybrid layer pattern '{}' needs num_layers = {} symbols, each M, *, - or E",
                                  where, p, m.num_layers));
  if ((p.find('E') != std::string::npos) != m.is_moe())
    throw ConfigError(fmt::format("{}: the hybrid layer pattern's MoE layers (E) and num_moe_experts = {} disagree",
                                  where, m.num_moe_experts));
  if (m.mamba_num_heads < 1 || m.mamba_head_dim < 1 || m.mamba_state_dim < 1 || m.mamba_num_groups < 1 ||
      m.mamba_num_heads % m.mamba_num_groups != 0)
    throw ConfigError(
        fmt::format("{}: the Mamba mixer needs heads, head dim, state dim and groups > 0 with the "
                    "groups dividing the heads (mamba_num_heads = {}, mamba_num_groups = {})",
                    where, m.mamba_num_heads, m.mamba_num_groups));
  if ((m.mtp_num_layers > 0) != !m.mtp_layer_pattern.empty())
    throw ConfigError(fmt::format("{}: a hybrid model's {} MTP depths need their layer pattern ('{}')", where,
                                  m.mtp_num_layers, m.mtp_layer_pattern));
  for (const char symbol : m.mtp_layer_pattern)
    if (p.find(symbol) == std::string::npos)  // p holds only M, *, - and E (checked above)
      throw ConfigError(
          fmt::format("{}: the MTP depth's layer '{}' has no layer of its kind in the main pattern to "
                      "be built as (its symbols must be M, *, - or E and appear there too)",
                      where, symbol));
  const char* unsupported = m.sliding_window > 0    ? "sliding-window attention"
                            : m.post_sublayer_norms ? "post-sublayer norms"
                                                    : nullptr;
  if (unsupported)
    throw ConfigError(fmt::format("{}: ptsim does not build {} in a hybrid model; remove it or the layer pattern",
                                  where, unsupported));
}

// DeepSeek-V4's compressed attention in ModelSpec's names (both formats
// reach here), and what ptsim does not build with it.
void validate_compressed_attention(const model::ModelSpec& m, const std::string& where) {
  const auto fail = [&](const std::string& why) {
    throw ConfigError(fmt::format("{}: DeepSeek-V4's compressed attention (csa_compress_ratios) {}", where, why));
  };
  if (static_cast<std::int64_t>(m.csa_compress_ratios.size()) != m.num_layers + m.mtp_num_layers)
    fail(fmt::format("has {} ratios; it needs one a layer and one an MTP depth ({})", m.csa_compress_ratios.size(),
                     m.num_layers + m.mtp_num_layers));
  if (m.multi_latent_attention || m.is_hybrid() || m.sliding_window > 0)
    fail("is an attention of its own: remove multi_latent_attention, hybrid_layer_pattern and sliding_window");
  if (m.num_query_groups != 1) fail(fmt::format("has one key/value head; num_query_groups is {}", m.num_query_groups));
  if (m.csa_window_size < 1 || m.q_lora_rank < 1 || m.o_lora_rank < 1 || m.o_groups < 1 ||
      m.num_attention_heads % m.o_groups != 0)
    fail(fmt::format("needs csa_window_size, q_lora_rank, o_lora_rank > 0 and o_groups dividing the {} heads",
                     m.num_attention_heads));
  if (m.qk_pos_emb_head_dim < 1 || m.qk_pos_emb_head_dim >= m.kv_channels)
    fail(fmt::format("needs a RoPE part (qk_pos_emb_head_dim = {}) above 0 and below the head's kv_channels = {}",
                     m.qk_pos_emb_head_dim, m.kv_channels));
  bool indexed = false;
  for (std::int64_t l = 0; l < m.num_layers + m.mtp_num_layers; ++l) indexed = indexed || m.compress_ratio(l) == 4;
  if (indexed &&
      (m.dsa_indexer_n_heads < 1 || m.dsa_indexer_topk < 1 || m.dsa_indexer_head_dim <= m.qk_pos_emb_head_dim))
    fail(
        "has ratio-4 layers, whose indexer needs dsa_indexer_n_heads and dsa_indexer_topk > 0 and "
        "dsa_indexer_head_dim above qk_pos_emb_head_dim");
  for (std::int64_t d = 0; d < m.mtp_num_layers; ++d) {
    const std::int64_t ratio = m.compress_ratio(m.num_layers + d);
    bool main = false;
    for (std::int64_t l = 0; l < m.num_layers; ++l) main = main || m.compress_ratio(l) == ratio;
    if (!main || ratio != m.compress_ratio(m.num_layers))
      fail(
          fmt::format("gives MTP depth {} the ratio {}; ptsim builds a depth as a main layer of its ratio, so "
                      "every depth needs one ratio that a main layer has",
                      d, ratio));
  }
}

}  // namespace

void validate_model(const model::ModelSpec& m, const std::string& where) {
  // Before any integer count of parameters or bytes is formed: an upper bound
  // in doubles (every width at its largest), so that 16 bytes a parameter of
  // optimizer state stay far inside 64 bits.
  const double h = static_cast<double>(m.hidden_size);
  const double heads = static_cast<double>(m.num_attention_heads);
  const double head_dim = static_cast<double>(std::max({m.kv_channels, m.qk_head_dim + m.qk_pos_emb_head_dim,
                                                        m.v_head_dim, m.hidden_size / m.num_attention_heads}));
  const double attention = 4 * h * heads * head_dim + 2 * h * static_cast<double>(m.q_lora_rank + m.kv_lora_rank);
  const double mlp = 3 * h * static_cast<double>(m.ffn_hidden_size + m.moe_shared_expert_intermediate_size) +
                     3 * h * static_cast<double>(m.num_moe_experts) * static_cast<double>(m.moe_ffn_hidden_size);
  const double mamba = h * static_cast<double>(m.mamba_in_proj_width() + m.mamba_inner()) +
                       6 * static_cast<double>(m.mamba_conv_channels() + m.mamba_inner());
  const double bound = static_cast<double>(m.num_layers) * (attention + mlp + mamba + 4 * h) +
                       2 * static_cast<double>(m.vocab_size + m.seq_length) * h;
  if (bound > kMaxParameters)
    throw ConfigError(fmt::format(
        "{}: the model has up to {:.3g} parameters, beyond ptsim's limit of {:g} (500 times the "
        "largest models trained); check num_layers = {}, hidden_size = {}, ffn_hidden_size = {} "
        "and the expert counts",
        where, bound, kMaxParameters, m.num_layers, m.hidden_size, m.ffn_hidden_size));
  if (m.num_attention_heads % m.num_query_groups != 0)
    throw ConfigError(fmt::format(
        "{}: num_query_groups = {} must divide num_attention_heads = {} (each key/value group "
        "serves a whole number of query heads)",
        where, m.num_query_groups, m.num_attention_heads));
  // Both formats reach here; the parsers name their own keys first, so these
  // only restate the rules in ModelSpec's (Megatron's) names.
  if (m.is_moe()) {
    if (m.moe_router_topk < 1 || m.moe_router_topk > m.num_moe_experts)
      throw ConfigError(fmt::format(
          "{}: moe_router_topk = {} must be in [1, num_moe_experts = {}]", where,
          m.moe_router_topk, m.num_moe_experts));
    if (m.moe_ffn_hidden_size < 1)
      throw ConfigError(fmt::format("{}: moe_ffn_hidden_size = {} must be > 0 in an MoE model",
                                    where, m.moe_ffn_hidden_size));
    if (m.first_dense_layers >= m.num_layers)
      throw ConfigError(fmt::format("{}: first_dense_layers = {} must be less than num_layers = {}",
                                    where, m.first_dense_layers, m.num_layers));
  }
  if (m.multi_latent_attention &&
      (m.kv_lora_rank < 1 || m.qk_head_dim < 1 || m.qk_pos_emb_head_dim < 1 || m.v_head_dim < 1))
    throw ConfigError(fmt::format(
        "{}: multi-head latent attention needs kv_lora_rank = {}, qk_head_dim = {}, "
        "qk_pos_emb_head_dim = {} and v_head_dim = {} all > 0",
        where, m.kv_lora_rank, m.qk_head_dim, m.qk_pos_emb_head_dim, m.v_head_dim));
  if (!m.sliding_window_layers.empty() &&
      (m.sliding_window < 1 ||
       static_cast<std::int64_t>(m.sliding_window_layers.size()) != m.num_layers))
    throw ConfigError(fmt::format(
        "{}: sliding_window_layers has {} entries for num_layers = {} and sliding_window = {}; "
        "it needs one entry per layer and a window > 0",
        where, m.sliding_window_layers.size(), m.num_layers, m.sliding_window));
  if (m.moe_latent_size < 0 || (m.moe_latent_size > 0 && !m.is_moe()))
    throw ConfigError(
        fmt::format("{}: moe_latent_size = {} applies only to mixture-of-experts models", where, m.moe_latent_size));
  if (!m.is_hybrid() && !m.mtp_layer_pattern.empty())
    throw ConfigError(
        fmt::format("{}: an MTP layer pattern ('{}') applies only to hybrid models; a transformer's MTP "
                    "depth is built as its last layer",
                    where, m.mtp_layer_pattern));
  if (m.is_hybrid()) validate_hybrid(m, where);
  if (m.has_compressed_attention()) validate_compressed_attention(m, where);
  if (m.mhc_num_residual_streams < 1 || (m.hyper_connections() && m.mhc_sinkhorn_iterations < 1))
    throw ConfigError(
        fmt::format("{}: hyper-connections need mhc_num_residual_streams ≥ 1 and, with more than one "
                    "stream, mhc_sinkhorn_iterations ≥ 1 (20 in DeepSeek-V4)",
                    where));
  if (m.moe_n_hash_layers < 0 || (m.moe_n_hash_layers > 0 && (!m.is_moe() || m.moe_n_hash_layers > m.num_layers)))
    throw ConfigError(fmt::format("{}: moe_n_hash_layers = {} needs an MoE model with at least that many layers", where,
                                  m.moe_n_hash_layers));
}

model::ModelSpec parse_model(const nlohmann::json& object, const std::string& where,
                             const std::string& fallback_name) {
  model::ModelSpec m = internal::is_hf_config(object)
                           ? internal::parse_hf_config(object, where, fallback_name)
                           : parse_megatron(object, where, fallback_name);
  validate_model(m, where);
  return m;
}

model::ModelSpec load_model(const std::string& path, InputFiles& inputs) {
  const nlohmann::json object = internal::read_json_file(path, inputs);
  return parse_model(object, path, std::filesystem::path(path).stem().string());
}

}  // namespace ptsim::config

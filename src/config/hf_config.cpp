// Hugging Face config.json import (see internal/hf_config.hpp). A published
// config carries many keys that do not shape training (token ids, dtype,
// generation settings, routing details); only the ones below are read, by
// model family: dense (Llama, Mistral, Qwen2/3, Phi-3, Gemma 1/2, GPT-2, GPT-NeoX, BERT),
// mixture-of-experts (Mixtral, Qwen3-MoE, DeepSeek-V3, gpt-oss) and hybrid
// (Nemotron-H, Nemotron 3).
#include "internal/hf_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "internal/hf_families.hpp"
#include "internal/object_reader.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::config::internal {

void set_heads(model::ModelSpec& m, ObjectReader& in, const std::string& heads_key,
               std::optional<std::int64_t> head_dim) {
  if (!head_dim && m.hidden_size % m.num_attention_heads != 0)
    in.fail(heads_key, fmt::format("must divide hidden_size = {}", m.hidden_size));
  m.kv_channels = head_dim.value_or(m.hidden_size / m.num_attention_heads);
}

namespace {

// A dense family carrying expert counts is a mislabelled MoE config.
void reject_experts(const nlohmann::json& object, const std::string& where,
                    const std::string& type) {
  for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts"})
    if (object.contains(key) && !object[key].is_null())
      throw ConfigError(
          fmt::format("{}: /{} = {}: model_type = {} is a dense family; a mixture-of-experts config names "
                      "its own model_type (mixtral, qwen3_moe, deepseek_v3, deepseek_v4, kimi_k2 or gpt_oss)",
                      where, key, show(object[key]), type));
}

// What every Llama-derived decoder shares: pre-norm RMSNorm, rotary
// positions, and the pre-training sequence length.
model::ModelSpec rmsnorm_rope(ObjectReader& in) {
  model::ModelSpec m;
  m.num_layers = in.integer("num_hidden_layers", 1, kMaxLayers);
  m.hidden_size = in.integer("hidden_size", 1, kMaxDim);
  m.num_attention_heads = in.integer("num_attention_heads", 1, kMaxDim);
  m.vocab_size = in.integer("vocab_size", 1, kMaxVocab);
  // The sequence length rule (docs/formats.md): long-context variants
  // stretch RoPE beyond the pre-training length, which rope_scaling records
  // (Llama 3.1; YaRN in DeepSeek-V3 and gpt-oss), and that pre-training
  // length is the one a step trains at; without it, max_position_embeddings,
  // the longest context the model takes (the CLI warns when it is long).
  m.seq_length = in.integer("max_position_embeddings", 1, kMaxSeq);
  m.seq_length_from = "max_position_embeddings";
  if (in.has("rope_scaling")) {  // null (Llama 2) counts as absent
    ObjectReader scaling = in.object("rope_scaling");
    if (const auto original =
            scaling.optional_integer("original_max_position_embeddings", 1, kMaxSeq)) {
      m.seq_length = *original;
      m.seq_length_from = "rope_scaling.original_max_position_embeddings";
    }
  }
  m.normalization = model::Normalization::RmsNorm;
  m.position_embedding = model::PositionEmbedding::Rope;
  m.dropout = in.optional_number("attention_dropout", 0.0, 0.99).value_or(0.0);
  return m;
}

// The above with SwiGLU MLPs and untied embeddings unless the config ties them.
model::ModelSpec rmsnorm_swiglu_rope(ObjectReader& in) {
  model::ModelSpec m = rmsnorm_rope(in);
  in.choice("hidden_act", {"silu", "swish"});  // SwiGLU's gate activation
  m.activation = model::Activation::SwiGlu;
  m.tie_embeddings = in.optional_boolean("tie_word_embeddings").value_or(false);
  return m;
}

// Grouped key/value heads (num_key_value_heads), the MLP width and the
// per-head width, as Llama's config names them (`head_dim_key`: the last's
// name where a family calls it otherwise).
void read_gqa(ObjectReader& in, model::ModelSpec& m, const char* head_dim_key = "head_dim") {
  m.num_query_groups =
      in.optional_integer("num_key_value_heads", 1, kMaxDim).value_or(m.num_attention_heads);
  m.ffn_hidden_size = in.integer("intermediate_size", 1, kMaxDim * 8);
  set_heads(m, in, "num_attention_heads", in.optional_integer(head_dim_key, 1, kMaxDim));
}

// Llama, Mistral, Qwen2: the above with GQA and no linear biases.
model::ModelSpec llama_like(ObjectReader& in) {
  model::ModelSpec m = rmsnorm_swiglu_rope(in);
  read_gqa(in, m);
  m.add_bias_linear = in.optional_boolean("mlp_bias").value_or(false);
  return m;
}

// Families without linear biases cannot have them on attention alone:
// add_bias_linear puts them on every linear layer.
void reject_attention_bias(ObjectReader& in) {
  if (in.optional_boolean("attention_bias").value_or(false))
    in.fail("attention_bias", "= true is not modelled for this family (ptsim's add_bias_linear "
                              "puts biases on every linear layer, the MLPs too); the published "
                              "configs set false");
}

// Routed experts and experts per token.
void read_experts(ObjectReader& in, model::ModelSpec& m, const std::string& experts_key) {
  m.num_moe_experts = in.integer(experts_key, 1, kMaxExperts);
  m.moe_router_topk = in.integer("num_experts_per_tok", 1, kMaxExperts);
  if (m.moe_router_topk > m.num_moe_experts)
    in.fail("num_experts_per_tok", fmt::format("must be in [1, {} = {}]: a token is routed to at "
                                               "most every expert",
                                               experts_key, m.num_moe_experts));
}

// Sliding-window and full-attention layers as layer_types lists them, or as
// Hugging Face's default alternates them without it (gpt-oss, Gemma 2): even
// layers slide, odd layers attend fully.
void read_alternating_windows(ObjectReader& in, model::ModelSpec& m) {
  m.sliding_window = in.optional_integer("sliding_window", 1, kMaxSeq).value_or(0);
  std::vector<std::uint8_t> sliding;
  if (in.has("layer_types")) {
    const nlohmann::json& types = in.array("layer_types");
    if (static_cast<std::int64_t>(types.size()) != m.num_layers)
      in.fail("layer_types", fmt::format("has {} entries; it needs one per layer, "
                                         "num_hidden_layers = {}",
                                         types.size(), m.num_layers));
    for (const nlohmann::json& type : types) {
      if (type != "sliding_attention" && type != "full_attention")
        in.fail("layer_types", fmt::format("has the entry {}; each entry must be "
                                           "\"sliding_attention\" or \"full_attention\"",
                                           show(type)));
      sliding.push_back(type == "sliding_attention" ? 1 : 0);
    }
  } else {
    // Hugging Face's default: even layers slide, odd layers attend fully.
    for (std::int64_t l = 0; l < m.num_layers; ++l) sliding.push_back(l % 2 == 0 ? 1 : 0);
  }
  const bool any_sliding = std::find(sliding.begin(), sliding.end(), 1) != sliding.end();
  if (any_sliding && m.sliding_window == 0)
    in.fail("sliding_window", "is missing; layer_types has sliding_attention layers, which need "
                              "the window in tokens");
  if (any_sliding) m.sliding_window_layers = std::move(sliding);
}

// Qwen2 (Qwen2, Qwen2.5): Llama's decoder with biases on the query, key and
// value projections (transformers' Qwen2Attention: q_proj, k_proj, v_proj
// with bias=True, o_proj without; no attention_bias key), as Megatron's
// --add-qkv-bias gives them.
model::ModelSpec qwen2(ObjectReader& in) {
  model::ModelSpec m = llama_like(in);
  m.add_qkv_bias = true;
  return m;
}

// Phi-3: Llama's decoder (its fused qkv_proj and gate_up_proj hold the same
// weights as Llama's separate ones), sliding-window attention in every layer
// when the config gives a window, and the pre-training length of its
// long-context variants at the top level (original_max_position_embeddings).
model::ModelSpec phi3(ObjectReader& in) {
  reject_attention_bias(in);
  model::ModelSpec m = llama_like(in);
  if (const auto original = in.optional_integer("original_max_position_embeddings", 1, kMaxSeq)) {
    m.seq_length = std::min(m.seq_length, *original);
    m.seq_length_from = "original_max_position_embeddings";
  }
  if (const auto window = in.optional_integer("sliding_window", 1, kMaxSeq)) {
    m.sliding_window = *window;
    m.sliding_window_layers.assign(static_cast<std::size_t>(m.num_layers), 1);
  }
  return m;
}

// Nemotron (Nemotron-4, Minitron; transformers' NemotronConfig): Llama's
// attention with grouped key/value heads and rotary positions on part of
// each head (partial_rotary_factor: the same kernels over the whole head),
// MLPs of one projection with squared ReLU (hidden_act relu2), LayerNorm
// (NemotronLayerNorm1P scales by 1 + weight: the same parameters), no
// biases unless mlp_bias, untied embeddings.
model::ModelSpec nemotron(ObjectReader& in) {
  reject_attention_bias(in);
  model::ModelSpec m = rmsnorm_rope(in);
  read_gqa(in, m);
  in.choice("hidden_act", {"relu2"});
  m.activation = model::Activation::SquaredRelu;
  m.normalization = model::Normalization::LayerNorm;
  m.tie_embeddings = in.optional_boolean("tie_word_embeddings").value_or(false);
  m.add_bias_linear = in.optional_boolean("mlp_bias").value_or(false);
  return m;
}

// Gemma (1 and 2): Llama's attention with an explicit head_dim, GeGLU MLPs
// (a tanh-approximated GeLU gate; transformers reads hidden_activation and
// falls back to hidden_act), RMSNorm, rotary positions and tied embeddings.
// Its RMSNorm scales by 1 + weight, the same parameters; the embedding's
// √h scaling is a scalar multiply.
model::ModelSpec gemma(ObjectReader& in) {
  reject_attention_bias(in);
  model::ModelSpec m = rmsnorm_rope(in);
  read_gqa(in, m);
  const char* activation_key = in.has("hidden_activation") ? "hidden_activation" : "hidden_act";
  in.choice(activation_key, {"gelu_pytorch_tanh", "gelu"});
  m.activation = model::Activation::GeGlu;
  m.tie_embeddings = in.optional_boolean("tie_word_embeddings").value_or(true);
  m.add_bias_linear = false;
  return m;
}

// Gemma 2: Gemma with a norm after each sublayer as well as before (four a
// layer: input, post_attention, pre_feedforward and post_feedforward
// layernorms), sliding-window attention alternating with full attention,
// and soft-capping of the attention scores and the final logits.
model::ModelSpec gemma2(ObjectReader& in) {
  model::ModelSpec m = gemma(in);
  m.post_sublayer_norms = true;
  read_alternating_windows(in, m);
  m.attn_logit_softcapping = in.optional_number("attn_logit_softcapping", 0.0, 1e6).value_or(0.0);
  m.final_logit_softcapping = in.optional_number("final_logit_softcapping", 0.0, 1e6).value_or(0.0);
  return m;
}

// Mixtral: Mistral's decoder with every MLP an MoE of num_local_experts
// experts of intermediate_size each.
model::ModelSpec mixtral(ObjectReader& in) {
  model::ModelSpec m = llama_like(in);
  read_experts(in, m, "num_local_experts");
  m.moe_ffn_hidden_size = m.ffn_hidden_size;
  // null in Mixtral 8x7B v0.1: full attention; a window applies to every layer.
  if (const auto window = in.optional_integer("sliding_window", 1, kMaxSeq)) {
    m.sliding_window = *window;
    m.sliding_window_layers.assign(static_cast<std::size_t>(m.num_layers), 1);
  }
  return m;
}

// Qwen3 (dense): Llama's decoder with an RMSNorm over each query and key head
// (q_norm, k_norm) and an explicit head_dim.
model::ModelSpec qwen3(ObjectReader& in) {
  if (!in.has("head_dim"))
    in.fail("head_dim", "is missing; Qwen3 configs give the per-head width explicitly (it is "
                        "not hidden_size / num_attention_heads)");
  if (in.optional_boolean("use_sliding_window").value_or(false))
    in.fail("use_sliding_window", "= true is not modelled for Qwen3 (every published Qwen3 "
                                  "config sets false); set it to false");
  reject_attention_bias(in);
  model::ModelSpec m = llama_like(in);
  m.qk_layernorm = true;
  return m;
}

// Qwen3-MoE: Qwen3's attention, and an MoE MLP in every layer.
// intermediate_size, the width of dense layers, is then used by none.
model::ModelSpec qwen3_moe(ObjectReader& in) {
  model::ModelSpec m = qwen3(in);
  read_experts(in, m, "num_experts");
  m.moe_ffn_hidden_size = in.integer("moe_intermediate_size", 1, kMaxDim * 8);
  if (in.optional_integer("decoder_sparse_step", 0, kMaxLayers).value_or(1) != 1)
    in.fail("decoder_sparse_step", "must be 1: ptsim simulates an MoE MLP in every layer (after "
                                   "any leading dense layers); MoE layers interleaved with dense "
                                   "ones are not modelled");
  if (in.has("mlp_only_layers") && !in.array("mlp_only_layers").empty())
    in.fail("mlp_only_layers", "must be empty: dense MLP layers picked by index are not "
                               "modelled in an MoE model");
  // norm_topk_prob only rescales the routing weights: no parameters, no GEMMs.
  return m;
}

// DeepSeek-V3: multi-head latent attention; the first first_k_dense_replace
// layers dense (intermediate_size), the others MoE with n_shared_experts
// shared experts of moe_intermediate_size each.
model::ModelSpec deepseek_v3(ObjectReader& in) {
  reject_attention_bias(in);
  model::ModelSpec m = rmsnorm_swiglu_rope(in);
  m.num_query_groups = m.num_attention_heads;  // MLA: no key/value groups
  m.ffn_hidden_size = in.integer("intermediate_size", 1, kMaxDim * 8);
  m.add_bias_linear = false;
  read_experts(in, m, "n_routed_experts");
  m.moe_ffn_hidden_size = in.integer("moe_intermediate_size", 1, kMaxDim * 8);
  m.moe_shared_expert_intermediate_size =
      in.integer("n_shared_experts", 0, kMaxExperts) * m.moe_ffn_hidden_size;
  m.first_dense_layers = in.integer("first_k_dense_replace", 0, kMaxLayers);
  if (m.first_dense_layers >= m.num_layers)
    in.fail("first_k_dense_replace", fmt::format("must be less than num_hidden_layers = {}",
                                                 m.num_layers));
  if (in.optional_integer("moe_layer_freq", 0, kMaxLayers).value_or(1) != 1)
    in.fail("moe_layer_freq", "must be 1: MoE layers interleaved with dense ones are not "
                              "modelled");
  m.multi_latent_attention = true;
  m.q_lora_rank = in.optional_integer("q_lora_rank", 1, kMaxDim).value_or(0);  // null: no query compression
  m.kv_lora_rank = in.integer("kv_lora_rank", 1, kMaxDim);
  m.qk_head_dim = in.integer("qk_nope_head_dim", 1, kMaxDim);
  m.qk_pos_emb_head_dim = in.integer("qk_rope_head_dim", 1, kMaxDim);
  m.v_head_dim = in.integer("v_head_dim", 1, kMaxDim);
  // kv_channels: the per-head width of the score product q·k, the no-RoPE
  // part plus the RoPE part (128 + 64 = 192 in DeepSeek-V3); values are
  // v_head_dim wide.
  m.kv_channels = m.qk_head_dim + m.qk_pos_emb_head_dim;
  // The multi-token-prediction modules trained beside the model (Megatron-
  // Bridge's DeepSeek bridge takes num_nextn_predict_layers as
  // mtp_num_layers).
  m.mtp_num_layers = in.optional_integer("num_nextn_predict_layers", 0, kMaxLayers).value_or(0);
  return m;
}

// DeepSeek-V4 (DeepseekV4ForCausalLM), as Megatron-Bridge's DeepSeekV4Bridge
// maps it (deepseek_v4_bridge.py at 067f987df): one key/value head of
// head_dim (its last qk_rope_head_dim rotated), queries through q_lora_rank,
// the grouped output projection (o_groups, o_lora_rank), a ratio a layer and
// an MTP depth (compress_ratios, or layer_types with compress_rates; a list
// of num_hidden_layers gets 0 for each depth, as the bridge pads it), the
// window (sliding_window), the indexer (index_*), hyper-connections
// (hc_mult, hc_sinkhorn_iters), hash-routed first layers (num_hash_layers,
// or mlp_layer_types' leading "hash_moe"), and an MoE MLP in every layer
// with n_shared_experts shared experts.
model::ModelSpec deepseek_v4(ObjectReader& in) {
  reject_attention_bias(in);
  model::ModelSpec m = rmsnorm_swiglu_rope(in);
  m.add_bias_linear = false;
  m.num_query_groups = in.integer("num_key_value_heads", 1, 1);
  m.kv_channels = in.integer("head_dim", 1, kMaxDim);
  m.qk_pos_emb_head_dim = in.integer("qk_rope_head_dim", 1, kMaxDim);
  m.q_lora_rank = in.integer("q_lora_rank", 1, kMaxDim);
  m.o_groups = in.integer("o_groups", 1, kMaxDim);
  m.o_lora_rank = in.integer("o_lora_rank", 1, kMaxDim);
  m.csa_window_size = in.integer("sliding_window", 1, kMaxSeq);
  m.dsa_indexer_n_heads = in.integer("index_n_heads", 1, kMaxDim);
  m.dsa_indexer_head_dim = in.integer("index_head_dim", 1, kMaxDim);
  m.dsa_indexer_topk = in.integer("index_topk", 1, kMaxSeq);
  m.mhc_num_residual_streams = in.integer("hc_mult", 1, 64);
  m.mhc_sinkhorn_iterations = in.integer("hc_sinkhorn_iters", 1, 1000);
  read_experts(in, m, "n_routed_experts");
  m.moe_ffn_hidden_size = in.integer("moe_intermediate_size", 1, kMaxDim * 8);
  m.ffn_hidden_size = m.moe_ffn_hidden_size;  // no dense layer reads it
  m.moe_shared_expert_intermediate_size = in.integer("n_shared_experts", 0, kMaxExperts) * m.moe_ffn_hidden_size;
  m.mtp_num_layers = in.optional_integer("num_nextn_predict_layers", 0, kMaxLayers).value_or(0);
  if (in.has("num_hash_layers")) {
    m.moe_n_hash_layers = in.integer("num_hash_layers", 0, m.num_layers);
  } else if (in.has("mlp_layer_types")) {
    for (const nlohmann::json& type : in.array("mlp_layer_types")) {
      if (type != "hash_moe") break;
      ++m.moe_n_hash_layers;
    }
  }
  if (in.has("compress_ratios")) {
    for (const nlohmann::json& r : in.array("compress_ratios")) {
      if (!r.is_number_integer() || r.get<std::int64_t>() < 0)
        in.fail("compress_ratios", fmt::format("has the entry {}; each must be an integer ratio ≥ 0", show(r)));
      m.csa_compress_ratios.push_back(r.get<std::int64_t>());
    }
  } else {
    if (!in.has("layer_types"))
      in.fail("compress_ratios", "is missing, and layer_types too: DeepSeek-V4 needs a compression ratio a layer");
    const auto rate = [&](const std::string& type, std::int64_t fallback) {
      if (!in.has("compress_rates")) return fallback;
      ObjectReader rates = in.object("compress_rates");
      return rates.optional_integer(type, 1, kMaxSeq).value_or(fallback);
    };
    for (const nlohmann::json& type : in.array("layer_types")) {
      const std::string name = type.is_string() ? type.get<std::string>() : std::string();
      if (name == "sliding_attention")
        m.csa_compress_ratios.push_back(0);
      else if (name == "compressed_sparse_attention")
        m.csa_compress_ratios.push_back(rate(name, 4));
      else if (name == "heavily_compressed_attention")
        m.csa_compress_ratios.push_back(rate(name, 128));
      else
        in.fail("layer_types", fmt::format("has {}; DeepSeek-V4's layers are sliding_attention, "
                                           "compressed_sparse_attention or heavily_compressed_attention",
                                           show(type)));
    }
  }
  if (static_cast<std::int64_t>(m.csa_compress_ratios.size()) == m.num_layers)
    m.csa_compress_ratios.resize(static_cast<std::size_t>(m.num_layers + m.mtp_num_layers), 0);
  if (static_cast<std::int64_t>(m.csa_compress_ratios.size()) < m.num_layers + m.mtp_num_layers)
    in.fail("compress_ratios", fmt::format("has {} ratios; it needs num_hidden_layers + num_nextn_predict_layers = {}",
                                           m.csa_compress_ratios.size(), m.num_layers + m.mtp_num_layers));
  m.csa_compress_ratios.resize(static_cast<std::size_t>(m.num_layers + m.mtp_num_layers));
  return m;
}

// gpt-oss: GQA with biases and attention sinks, alternating sliding-window and
// full attention (layer_types), and an MoE MLP of num_local_experts experts of
// intermediate_size in every layer.
model::ModelSpec gpt_oss(ObjectReader& in) {
  model::ModelSpec m = llama_like(in);
  read_experts(in, m, "num_local_experts");
  m.moe_ffn_hidden_size = m.ffn_hidden_size;
  // attention_bias: biases on q, k, v and o, and gpt-oss's experts and router
  // carry them too, as add_bias_linear gives them in Megatron-Core. The
  // attention sinks (one learned logit per head) have no ModelSpec field and
  // are not counted: 64 · 36 = 2304 parameters in gpt-oss-120b.
  m.add_bias_linear = in.optional_boolean("attention_bias").value_or(false);
  read_alternating_windows(in, m);
  return m;
}

// Nemotron-H and Nemotron 3 (transformers' NemotronHConfig): Megatron's
// hybrid stack, one layer a symbol of hybrid_override_pattern (or, in later
// configs, a name of layers_block_type): Mamba-2 mixers (mamba_num_heads of
// mamba_head_dim, n_groups groups of ssm_state_size, a conv_kernel of 4),
// attention without position embedding (the mixers carry the order), dense
// MLPs of intermediate_size with squared ReLU, and MoE MLPs of
// n_routed_experts experts of moe_intermediate_size with one shared MLP of
// moe_shared_expert_intermediate_size; RMSNorm, untied embeddings.
model::ModelSpec nemotron_h(ObjectReader& in) {
  reject_attention_bias(in);
  model::ModelSpec m = rmsnorm_rope(in);
  m.position_embedding = model::PositionEmbedding::None;
  read_gqa(in, m, in.has("head_dim") ? "head_dim" : "attention_head_dim");
  in.choice(in.has("mlp_hidden_act") ? "mlp_hidden_act" : "hidden_act", {"relu2"});
  m.activation = model::Activation::SquaredRelu;
  m.tie_embeddings = in.optional_boolean("tie_word_embeddings").value_or(false);
  m.add_bias_linear = in.optional_boolean("mlp_bias").value_or(false);
  if (in.optional_boolean("mamba_proj_bias").value_or(false))
    in.fail("mamba_proj_bias",
            "= true is not modelled (Megatron's MambaMixer builds its projections without "
            "biases); the published configs set false");
  if (in.has("hybrid_override_pattern")) {
    m.hybrid_layer_pattern = in.string("hybrid_override_pattern");
  } else {
    const nlohmann::json& types = in.array("layers_block_type");
    for (const nlohmann::json& type : types) {
      const std::string name = type.is_string() ? type.get<std::string>() : "";
      const char symbol = name == "mamba"       ? 'M'
                          : name == "attention" ? '*'
                          : name == "mlp"       ? '-'
                          : name == "moe"       ? 'E'
                                                : '?';
      if (symbol == '?')
        in.fail("layers_block_type", fmt::format("has the entry {}; each entry must be \"mamba\", \"attention\", "
                                                 "\"mlp\" or \"moe\"",
                                                 show(type)));
      m.hybrid_layer_pattern += symbol;
    }
  }
  if (static_cast<std::int64_t>(m.hybrid_layer_pattern.size()) != m.num_layers)
    in.fail(in.has("hybrid_override_pattern") ? "hybrid_override_pattern" : "layers_block_type",
            fmt::format("has {} layers; it needs num_hidden_layers = {}", m.hybrid_layer_pattern.size(), m.num_layers));
  if (in.optional_integer("conv_kernel", 1, kMaxDim).value_or(model::ModelSpec::kMambaConvWidth) !=
      model::ModelSpec::kMambaConvWidth)
    in.fail("conv_kernel", fmt::format("must be {}: Megatron's MambaMixer convolves over {} tokens",
                                       model::ModelSpec::kMambaConvWidth, model::ModelSpec::kMambaConvWidth));
  m.mamba_head_dim = in.integer("mamba_head_dim", 1, kMaxDim);
  m.mamba_num_heads = in.integer("mamba_num_heads", 1, kMaxDim);
  m.mamba_state_dim = in.integer("ssm_state_size", 1, kMaxDim);
  m.mamba_num_groups = in.integer("n_groups", 1, kMaxDim);
  if (m.hybrid_layer_pattern.find('E') != std::string::npos) {
    read_experts(in, m, "n_routed_experts");
    m.moe_ffn_hidden_size = in.integer("moe_intermediate_size", 1, kMaxDim * 8);
    m.moe_shared_expert_intermediate_size =
        in.optional_integer("moe_shared_expert_intermediate_size", 0, kMaxDim * 8).value_or(0);
    m.moe_latent_size = in.optional_integer("moe_latent_size", 1, kMaxDim).value_or(0);  // null: none
  }
  // MTP depths of mtp_hybrid_override_pattern's layers, one weight set
  // unless the config says otherwise (Megatron-Bridge's NemotronHBridge at
  // 067f987df: mtp_use_repeated_layer defaults to True).
  m.mtp_num_layers = in.optional_integer("num_nextn_predict_layers", 0, kMaxLayers).value_or(0);
  if (m.mtp_num_layers > 0) {
    if (!in.has("mtp_hybrid_override_pattern"))
      in.fail("mtp_hybrid_override_pattern",
              fmt::format("is missing; num_nextn_predict_layers = {} needs the MTP depth's layers (e.g. \"*E\")",
                          m.mtp_num_layers));
    m.mtp_layer_pattern = in.string("mtp_hybrid_override_pattern");
    m.mtp_use_repeated_layer = in.optional_boolean("mtp_use_repeated_layer").value_or(true);
  }
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
    in.fail("model_type",
            "is missing: a Hugging Face config names its model_type "
            "(llama, mistral, qwen2, qwen3, phi3, gemma, gemma2, nemotron, nemotron_h, mixtral, qwen3_moe, "
            "deepseek_v3, deepseek_v4, kimi_k2, gpt_oss, gpt2, gpt_neox or bert)");
  const std::string type = in.choice("model_type", {"llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2",
                                                    "nemotron", "nemotron_h", "mixtral", "qwen3_moe", "deepseek_v3",
                                                    "deepseek_v4", "kimi_k2", "gpt_oss", "gpt2", "gpt_neox", "bert"});
  model::ModelSpec m;
  if (type == "mixtral") {
    m = mixtral(in);
  } else if (type == "qwen3_moe") {
    m = qwen3_moe(in);
  } else if (type == "deepseek_v3" || type == "kimi_k2") {
    // Kimi K2 is DeepSeek-V3's architecture (its config names
    // DeepseekV3ForCausalLM; Megatron-Bridge's KimiK2Bridge maps it as MLA
    // and MoE the same way, kimi_bridge.py at 067f987df).
    m = deepseek_v3(in);
  } else if (type == "deepseek_v4") {
    m = deepseek_v4(in);
  } else if (type == "gpt_oss") {
    m = gpt_oss(in);
  } else if (type == "nemotron_h") {
    m = nemotron_h(in);  // dense or MoE, as its layer pattern says
  } else {
    reject_experts(object, where, type);
    if (type == "gpt2") {
      m = gpt2(in);
    } else if (type == "gpt_neox") {
      m = gpt_neox(in);
    } else if (type == "bert") {
      m = bert(in);
    } else if (type == "qwen3") {
      m = qwen3(in);
    } else if (type == "qwen2") {
      m = qwen2(in);
    } else if (type == "phi3") {
      m = phi3(in);
    } else if (type == "gemma") {
      m = gemma(in);
    } else if (type == "gemma2") {
      m = gemma2(in);
    } else if (type == "nemotron") {
      m = nemotron(in);
    } else {
      // Llama's attention_bias puts biases on q, k, v and o alike, which no
      // published Llama or Mistral config sets.
      reject_attention_bias(in);
      m = llama_like(in);
    }
  }
  m.name = fallback_name;
  return m;
}

}  // namespace ptsim::config::internal

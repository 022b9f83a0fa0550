// Parameter counts of a ModelSpec, layer by layer as Megatron-LM builds it:
// dense or mixture-of-experts MLPs, standard or multi-head latent attention.
#include "ptsim/model/model_spec.hpp"

namespace ptsim::model {

std::string to_string(Activation a) {
  switch (a) {
    case Activation::Gelu: return "gelu";
    case Activation::SwiGlu: return "swiglu";
    case Activation::GeGlu: return "geglu";
    case Activation::SquaredRelu: return "squared-relu";
  }
  return "gelu";
}

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

// A compressor of the pooled keys (csa.py's Compressor): its key/value and
// gate projections h → coff·width (coff 2 with the ratio-4 overlapping
// windows, else 1), the positional bias of a window (ape: ratio × coff·width)
// and the pooled key's norm.
std::int64_t compressor_parameters_of(const ModelSpec& m, std::int64_t ratio, std::int64_t width) {
  const std::int64_t coff = ratio == 4 ? 2 : 1;
  return 2 * m.hidden_size * coff * width + ratio * coff * width + width;
}

// A norm over `width` values has a scale vector, and a bias vector too for LayerNorm.
std::int64_t norm_parameters(const ModelSpec& m, std::int64_t width) {
  return m.normalization == Normalization::LayerNorm ? 2 * width : width;
}

// A linear layer in → out, with its bias when the model has linear biases.
std::int64_t linear(const ModelSpec& m, std::int64_t in, std::int64_t out) {
  return in * out + (m.add_bias_linear ? out : 0);
}

// Multi-head latent attention (DeepSeek-V2 §2.1, DeepSeek-V3 §2.1.1), with
// Megatron-Core's names; h hidden, a heads, d = qk_head_dim, r =
// qk_pos_emb_head_dim, v = v_head_dim:
//   queries  h → q_lora_rank (q_a_proj), norm, q_lora_rank → a·(d+r) (q_b_proj),
//            or h → a·(d+r) directly when q_lora_rank = 0
//   keys and values  h → kv_lora_rank + r (kv_a_proj_with_mqa: the latent and
//            the RoPE key shared by the heads), norm over the latent,
//            kv_lora_rank → a·(d+v) (kv_b_proj)
//   output   a·v → h (o_proj)
std::int64_t latent_attention_parameters(const ModelSpec& m) {
  const std::int64_t h = m.hidden_size;
  const std::int64_t a = m.num_attention_heads;
  const std::int64_t qk = m.qk_head_dim + m.qk_pos_emb_head_dim;
  std::int64_t p = 0;
  if (m.q_lora_rank > 0) {
    p += linear(m, h, m.q_lora_rank) + norm_parameters(m, m.q_lora_rank) +
         linear(m, m.q_lora_rank, a * qk);
  } else {
    p += linear(m, h, a * qk);
  }
  p += linear(m, h, m.kv_lora_rank + m.qk_pos_emb_head_dim) + norm_parameters(m, m.kv_lora_rank) +
       linear(m, m.kv_lora_rank, a * (m.qk_head_dim + m.v_head_dim));
  return p + linear(m, a * m.v_head_dim, h);
}

// Self-attention: the fused QKV projection (GQA: num_query_groups key/value
// heads), the output projection, and with qk_layernorm one norm over a head's
// width for the queries and one for the keys, shared by the heads.
std::int64_t attention_parameters(const ModelSpec& m, std::int64_t layer) {
  if (m.has_compressed_attention()) return compressed_attention_parameters(m, layer);
  if (m.multi_latent_attention) return latent_attention_parameters(m);
  const std::int64_t q_width = m.num_attention_heads * m.kv_channels;
  const std::int64_t kv_width = m.num_query_groups * m.kv_channels;
  const std::int64_t qkv = q_width + 2 * kv_width;
  std::int64_t p = m.hidden_size * qkv + (m.qkv_bias() ? qkv : 0) + linear(m, q_width, m.hidden_size);
  if (m.qk_layernorm) p += 2 * norm_parameters(m, m.kv_channels);
  return p;
}

// An MLP of width `ffn` on tokens `io` wide (the hidden size; a latent MoE's
// routed experts: the latent size): a gated MLP's first projection produces
// gate and up halves, 2·ffn outputs (Megatron's fused fc1; HF's gate_proj and
// up_proj).
std::int64_t mlp_parameters(const ModelSpec& m, std::int64_t ffn, std::int64_t io) {
  const std::int64_t fc1_out = m.gated_mlp() ? 2 * ffn : ffn;
  return linear(m, io, fc1_out) + linear(m, ffn, io);
}

// Layer `l` with `experts` of its routed experts: attention, the norms
// (before attention and the MLP, and after each with post_sublayer_norms),
// and the MLP. An MoE MLP is the router (h → E
// logits; Megatron-Core gives it a bias with add_bias_linear, as gpt-oss
// has), the routed experts and the shared experts, one MLP of their total
// width (Megatron's SharedExpertMLP). A hybrid model's layer has one of the
// mixer, attention, a dense or an MoE MLP, with its one norm.
std::int64_t layer_with_experts(const ModelSpec& m, std::int64_t l, std::int64_t experts) {
  std::int64_t p = m.norms_per_layer() * norm_parameters(m, m.hidden_size) + hyper_connection_parameters(m);
  if (m.is_mamba_layer(l)) return p + mamba_parameters(m);
  if (m.has_attention(l)) p += attention_parameters(m, l);
  if (!m.has_mlp(l)) return p;
  const std::int64_t h = m.hidden_size;
  if (!m.is_moe_layer(l)) return p + mlp_parameters(m, m.ffn_hidden_size, h);
  p += linear(m, h, m.num_moe_experts);
  p += moe_latent_parameters(m);
  p += experts * mlp_parameters(m, m.moe_ffn_hidden_size, m.moe_token_width());
  if (m.moe_shared_expert_intermediate_size > 0) p += mlp_parameters(m, m.moe_shared_expert_intermediate_size, h);
  return p;
}

}  // namespace

// DeepSeek-V4's attention (csa.py and the dsv4_hybrid self-attention), h
// hidden, a heads of d = kv_channels, with its layer's compression ratio:
//   queries  h → q_lora_rank, norm, → a·d
//   key/value  h → d (one head, key and value the same), norm
//   output   a·d in o_groups groups, each → o_lora_rank (wo_a), then
//            o_groups·o_lora_rank → h (wo_b); an attention sink a head
//   ratio > 0  a compressor of width d; ratio 4 also the indexer: queries
//            q_lora_rank → heads·width (wq_b), head weights h → heads, and a
//            compressor of its own width. No biases.
std::int64_t compressed_attention_parameters(const ModelSpec& m, std::int64_t layer) {
  const std::int64_t h = m.hidden_size, a = m.num_attention_heads, d = m.kv_channels;
  const std::int64_t ratio = m.compress_ratio(layer);
  std::int64_t p = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * a * d + h * d + d;
  p += m.o_lora_rank * a * d + m.o_groups * m.o_lora_rank * h + a;
  if (ratio > 1) p += compressor_parameters_of(m, ratio, d);
  if (ratio == 4) {
    const std::int64_t heads = m.dsa_indexer_n_heads, width = m.dsa_indexer_head_dim;
    p += m.q_lora_rank * heads * width + h * heads + compressor_parameters_of(m, ratio, width);
  }
  return p;
}

std::int64_t hyper_connection_parameters(const ModelSpec& m) {
  if (!m.hyper_connections()) return 0;
  const std::int64_t n = m.mhc_num_residual_streams;
  return 2 * (n * m.hidden_size * (n * n + 2 * n) + (n * n + 2 * n) + 3);
}

// Its linears carry no bias (MambaMixer's bias=False).
std::int64_t mamba_parameters(const ModelSpec& m) {
  return m.hidden_size * m.mamba_in_proj_width() + m.mamba_conv_channels() * (ModelSpec::kMambaConvWidth + 1) +
         3 * m.mamba_num_heads + m.mamba_inner() + m.mamba_inner() * m.hidden_size;
}

std::int64_t moe_latent_parameters(const ModelSpec& m) {
  if (m.moe_latent_size == 0) return 0;
  return linear(m, m.hidden_size, m.moe_latent_size) + linear(m, m.moe_latent_size, m.hidden_size);
}

std::int64_t layer_parameters(const ModelSpec& m, std::int64_t layer) {
  return layer_with_experts(m, layer, m.num_moe_experts);
}

std::int64_t active_layer_parameters(const ModelSpec& m, std::int64_t layer) {
  return layer_with_experts(m, layer, m.moe_router_topk);
}

std::int64_t parameters_per_layer(const ModelSpec& m) { return layer_parameters(m, 0); }

std::int64_t embedding_parameters(const ModelSpec& m) {
  std::int64_t p = m.vocab_size * m.hidden_size;
  if (m.position_embedding == PositionEmbedding::LearnedAbsolute) p += m.seq_length * m.hidden_size;
  return p;
}

std::int64_t output_parameters(const ModelSpec& m) {
  const std::int64_t head = m.tie_embeddings ? 0 : m.vocab_size * m.hidden_size;
  return norm_parameters(m, m.hidden_size) + head;
}

std::vector<std::int64_t> ModelSpec::mtp_layer_kinds() const {
  if (has_compressed_attention() && mtp_num_layers > 0) {
    // A depth's one layer is built as the first main layer of the depth's
    // ratio (validate_model refuses depths of different ratios, and a ratio
    // no main layer has).
    for (std::int64_t l = 0; l < num_layers; ++l)
      if (compress_ratio(l) == compress_ratio(num_layers)) return {l};
  }
  if (!is_hybrid()) return {num_layers - 1};
  std::vector<std::int64_t> kinds;
  for (const char symbol : mtp_layer_pattern) {
    const std::size_t first = hybrid_layer_pattern.find(symbol);
    // validate_model refuses an MTP symbol the main pattern lacks.
    kinds.push_back(first == std::string::npos ? num_layers - 1 : static_cast<std::int64_t>(first));
  }
  return kinds;
}

std::int64_t mtp_depth_parameters(const ModelSpec& m) {
  std::int64_t p = 2 * m.hidden_size * m.hidden_size + 3 * norm_parameters(m, m.hidden_size);
  for (const std::int64_t kind : m.mtp_layer_kinds()) p += layer_parameters(m, kind);
  return p;
}

std::int64_t total_parameters(const ModelSpec& m) {
  std::int64_t p = embedding_parameters(m) + output_parameters(m) + m.mtp_weight_sets() * mtp_depth_parameters(m);
  for (std::int64_t l = 0; l < m.num_layers; ++l) p += layer_parameters(m, l);
  return p;
}

std::int64_t active_parameters(const ModelSpec& m) {
  std::int64_t p = embedding_parameters(m) + output_parameters(m);
  for (std::int64_t l = 0; l < m.num_layers; ++l) p += active_layer_parameters(m, l);
  return p;
}

}  // namespace ptsim::model

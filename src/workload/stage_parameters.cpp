// Per-rank parameter counts and their static memory (see stage_parameters.hpp).
#include "ptsim/workload/stage_parameters.hpp"

#include <fmt/format.h>

#include "ptsim/common/error.hpp"

namespace ptsim::workload {

namespace {

std::int64_t norm_parameters(const model::ModelSpec& m, std::int64_t width) {
  return m.normalization == model::Normalization::LayerNorm ? 2 * width : width;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// A TP-split MLP of `width`: fc1 (2·width when gated) column-parallel, fc2 row-parallel.
RankParameters dense_mlp(const model::ModelSpec& m, std::int64_t width, std::int64_t tp) {
  const std::int64_t h = m.hidden_size;
  const std::int64_t fc1 = m.gated_mlp() ? 2 * width : width;
  std::int64_t split = h * fc1 + width * h + (m.add_bias_linear ? fc1 : 0);
  return {split / tp + (m.add_bias_linear ? h : 0), 0};
}

}  // namespace

RankParameters layer_parameters_per_rank(const model::ModelSpec& m, const strategy::ParallelConfig& c,
                                         std::int64_t layer) {
  const std::int64_t h = m.hidden_size;
  const std::int64_t tp = c.tp;
  RankParameters p;
  p.dense = m.norms_per_layer() * norm_parameters(m, h) + model::hyper_connection_parameters(m);
  if (m.is_mamba_layer(layer)) {
    p.dense += model::mamba_parameters(m) / tp;  // split by heads and groups (MambaMixer's *_local_tp)
    return p;
  }
  // Attention.
  const bool attention = m.has_attention(layer);
  if (attention && m.has_compressed_attention()) {
    p.dense += model::compressed_attention_parameters(m, layer);  // TP 1 (resolve_run)
  } else if (attention && m.multi_latent_attention) {
    const std::int64_t a = m.num_attention_heads, qk = m.qk_head_dim + m.qk_pos_emb_head_dim;
    const std::int64_t replicated = (m.q_lora_rank > 0 ? h * m.q_lora_rank + m.q_lora_rank : 0) +
                                    h * (m.kv_lora_rank + m.qk_pos_emb_head_dim) + m.kv_lora_rank;
    const std::int64_t split = (m.q_lora_rank > 0 ? m.q_lora_rank : h) * a * qk +
                               m.kv_lora_rank * a * (m.qk_head_dim + m.v_head_dim) + a * m.v_head_dim * h;
    p.dense += replicated + split / tp;
  } else if (attention) {
    const std::int64_t q = m.num_attention_heads * m.kv_channels;
    const std::int64_t kv = m.num_query_groups * m.kv_channels;
    const std::int64_t split = h * (q + 2 * kv) + q * h + (m.qkv_bias() ? q + 2 * kv : 0);
    p.dense += split / tp + (m.add_bias_linear ? h : 0) + (m.qk_layernorm ? 2 * m.kv_channels : 0);
  }
  // MLP.
  if (!m.has_mlp(layer)) return p;
  if (!m.is_moe_layer(layer)) {
    p += dense_mlp(m, m.ffn_hidden_size, tp);
    return p;
  }
  const std::int64_t fe = m.moe_ffn_hidden_size, io = m.moe_token_width();
  const std::int64_t fc1 = m.gated_mlp() ? 2 * fe : fe;
  const std::int64_t per_expert = (io * fc1 + fe * io) / c.expert_tp + (m.add_bias_linear ? fc1 / c.expert_tp + io : 0);
  p.expert = m.num_moe_experts / c.ep * per_expert;
  p.dense += h * m.num_moe_experts + (m.add_bias_linear ? m.num_moe_experts : 0);  // router
  // The latent projections, whole on every TP rank (parallel_mode "duplicated").
  p.dense += model::moe_latent_parameters(m);
  if (m.moe_shared_expert_intermediate_size > 0) p += dense_mlp(m, m.moe_shared_expert_intermediate_size, tp);
  return p;
}

std::vector<std::vector<std::int64_t>> layer_parameter_modules(const model::ModelSpec& m,
                                                               const strategy::ParallelConfig& c, std::int64_t layer) {
  if (m.multi_latent_attention || m.is_moe_layer(layer) || m.is_hybrid())
    throw ConfigError(
        fmt::format("model {}: parameters one tensor at a time (--zero3-blocking, DeepSpeed 0.3) "
                    "are modelled for dense layers with standard attention only; layer {} is {}",
                    m.name, layer,
                    m.multi_latent_attention ? "multi-latent attention"
                    : m.is_hybrid()          ? "a hybrid model's layer"
                                             : "MoE"));
  const std::int64_t h = m.hidden_size, tp = c.tp;
  const bool bias = m.add_bias_linear;
  std::vector<std::vector<std::int64_t>> modules;
  const auto norm = [&] {
    if (m.normalization == model::Normalization::LayerNorm) {
      modules.push_back({h, h});
    } else {
      modules.push_back({h});
    }
  };
  // A linear of `in` × `out` on this rank, with its bias of `out_bias` elements.
  const auto linear = [&](std::int64_t weight, std::int64_t out_bias) {
    if (bias) {
      modules.push_back({weight, out_bias});
    } else {
      modules.push_back({weight});
    }
  };
  const std::int64_t q = m.num_attention_heads * m.kv_channels, kv = m.num_query_groups * m.kv_channels;
  norm();
  // QKV, column-parallel, with the per-head query and key norms Megatron
  // keeps inside the attention module.
  std::vector<std::int64_t> qkv{h * (q + 2 * kv) / tp};
  if (m.qkv_bias()) qkv.push_back((q + 2 * kv) / tp);
  if (m.qk_layernorm) {
    qkv.push_back(m.kv_channels);
    qkv.push_back(m.kv_channels);
  }
  modules.push_back(qkv);
  linear(q * h / tp, h);  // output projection, row-parallel: its bias whole
  if (m.post_sublayer_norms) norm();
  norm();
  const std::int64_t width = m.ffn_hidden_size;
  const std::int64_t fc1 = m.gated_mlp() ? 2 * width : width;
  linear(h * fc1 / tp, fc1 / tp);
  linear(width * h / tp, h);
  if (m.post_sublayer_norms) norm();
  return modules;
}

std::vector<std::int64_t> layer_parameter_tensors(const model::ModelSpec& m, const strategy::ParallelConfig& c,
                                                  std::int64_t layer) {
  std::vector<std::int64_t> t;
  for (const auto& module : layer_parameter_modules(m, c, layer)) t.insert(t.end(), module.begin(), module.end());
  return t;
}

RankParameters weight_elements(const std::vector<WeightMatrix>& weights) {
  RankParameters p;
  for (const WeightMatrix& w : weights) (w.expert ? p.expert : p.dense) += w.rows * w.cols * w.count;
  return p;
}

std::vector<WeightMatrix> layer_weight_matrices(const model::ModelSpec& m, const strategy::ParallelConfig& c,
                                                std::int64_t layer) {
  const std::int64_t h = m.hidden_size, tp = c.tp;
  std::vector<WeightMatrix> w;
  // Column-parallel (output rows split), row-parallel (input columns split), whole.
  const auto column = [&](std::int64_t out, std::int64_t in, std::int64_t t, bool expert = false,
                          std::int64_t count = 1) {
    w.push_back({out / t, in, 0, t, expert, count});
  };
  const auto row = [&](std::int64_t out, std::int64_t in, std::int64_t t, bool expert = false, std::int64_t count = 1) {
    w.push_back({out, in / t, 1, t, expert, count});
  };
  const auto whole = [&](std::int64_t out, std::int64_t in) { w.push_back({out, in, -1, 1, false, 1}); };
  if (m.is_mamba_layer(layer)) {
    // Only the output projection: MambaMixer marks its input projection
    // use_muon = False, and the convolution's weights are not matrices.
    row(h, m.mamba_inner(), tp);
    return w;
  }
  const bool attention = m.has_attention(layer);
  if (attention && m.multi_latent_attention) {
    const std::int64_t a = m.num_attention_heads, qk = m.qk_head_dim + m.qk_pos_emb_head_dim;
    if (m.q_lora_rank > 0) {
      whole(m.q_lora_rank, h);
      column(a * qk, m.q_lora_rank, tp);
    } else {
      column(a * qk, h, tp);
    }
    whole(m.kv_lora_rank + m.qk_pos_emb_head_dim, h);
    column(a * (m.qk_head_dim + m.v_head_dim), m.kv_lora_rank, tp);
    row(h, a * m.v_head_dim, tp);
  } else if (attention) {
    const std::int64_t q = m.num_attention_heads * m.kv_channels, kv = m.num_query_groups * m.kv_channels;
    column(q, h, tp);
    column(kv, h, tp);
    column(kv, h, tp);
    row(h, q, tp);
  }
  const auto mlp = [&](std::int64_t width, std::int64_t io, std::int64_t t, bool expert, std::int64_t count) {
    column(m.gated_mlp() ? 2 * width : width, io, t, expert, count);
    row(io, width, t, expert, count);
  };
  if (!m.has_mlp(layer)) return w;
  if (!m.is_moe_layer(layer)) {
    mlp(m.ffn_hidden_size, h, tp, false, 1);
    return w;
  }
  whole(m.num_moe_experts, h);  // the router
  if (m.moe_latent_size > 0) {
    whole(m.moe_latent_size, h);  // fc1_latent_proj
    whole(h, m.moe_latent_size);  // fc2_latent_proj
  }
  mlp(m.moe_ffn_hidden_size, m.moe_token_width(), c.expert_tp, true, m.num_moe_experts / c.ep);
  if (m.moe_shared_expert_intermediate_size > 0) mlp(m.moe_shared_expert_intermediate_size, h, tp, false, 1);
  return w;
}

std::vector<WeightMatrix> mtp_depth_weight_matrices(const model::ModelSpec& m, const strategy::ParallelConfig& c) {
  std::vector<WeightMatrix> w;
  for (const std::int64_t kind : m.mtp_layer_kinds()) {
    const std::vector<WeightMatrix> layer = layer_weight_matrices(m, c, kind);
    w.insert(w.end(), layer.begin(), layer.end());
  }
  w.push_back({m.hidden_size / c.tp, 2 * m.hidden_size, 0, c.tp, false, 1});
  return w;
}

std::int64_t layer_tp_replicated_parameters(const model::ModelSpec& m, const strategy::ParallelConfig& c,
                                            std::int64_t layer) {
  if (c.tp == 1) return 0;
  const std::int64_t h = m.hidden_size;
  const bool attention = m.has_attention(layer);
  std::int64_t n = attention && m.qk_layernorm && !m.multi_latent_attention ? 2 * m.kv_channels : 0;
  if (!c.sequence_parallel) return n;
  n += m.norms_per_layer() * norm_parameters(m, h);
  const bool moe = m.is_moe_layer(layer);
  const bool mlp_fc2 = m.has_mlp(layer) && (!moe || m.moe_shared_expert_intermediate_size > 0);
  if (m.add_bias_linear) n += (attention ? h : 0) + (mlp_fc2 ? h : 0);  // output projection's and FC2's biases
  if (moe) n += h * m.num_moe_experts + (m.add_bias_linear ? m.num_moe_experts : 0);  // router
  if (moe) n += model::moe_latent_parameters(m);
  // MLA's down projections and latent norms, as layer_parameters_per_rank counts them.
  if (attention && m.multi_latent_attention) {
    if (m.q_lora_rank > 0) n += h * m.q_lora_rank + m.q_lora_rank;
    n += h * (m.kv_lora_rank + m.qk_pos_emb_head_dim) + m.kv_lora_rank;
  }
  return n;
}

std::int64_t output_tp_replicated_parameters(const model::ModelSpec& m, const strategy::ParallelConfig& c) {
  return c.tp > 1 && c.sequence_parallel ? norm_parameters(m, m.hidden_size) : 0;
}

std::int64_t embedding_parameters_per_rank(const model::ModelSpec& m, std::int64_t tp) {
  std::int64_t p = m.vocab_size / tp * m.hidden_size;
  if (m.position_embedding == model::PositionEmbedding::LearnedAbsolute) p += m.seq_length * m.hidden_size;
  return p;
}

RankParameters mtp_parameters_per_rank(const model::ModelSpec& m, const strategy::ParallelConfig& c,
                                       bool separate_embedding) {
  RankParameters p;
  if (m.mtp_num_layers == 0) return p;
  const std::int64_t h = m.hidden_size;
  RankParameters depth;
  for (const std::int64_t kind : m.mtp_layer_kinds()) depth += layer_parameters_per_rank(m, c, kind);
  depth.dense += 2 * h * h / c.tp + 3 * norm_parameters(m, h);
  for (std::int64_t d = 0; d < m.mtp_weight_sets(); ++d) p += depth;
  // The word embedding only: positions, if learned, stay with the first stage.
  if (separate_embedding) p.dense += m.vocab_size / c.tp * h;
  return p;
}

std::int64_t output_parameters_per_rank(const model::ModelSpec& m, std::int64_t tp, bool separate_head) {
  const bool own_head = !m.tie_embeddings || separate_head;
  return norm_parameters(m, m.hidden_size) + (own_head ? m.vocab_size / tp * m.hidden_size : 0);
}

StaticMemory static_memory(std::int64_t parameters, int zero_stage, std::int64_t group, int gradient_bytes,
                           bool fp32_shards, std::int64_t optimizer_group, int state_bytes) {
  const auto p = static_cast<std::uint64_t>(parameters);
  const auto shard = static_cast<std::uint64_t>(ceil_div(parameters, group));
  const auto optimizer_shard =
      static_cast<std::uint64_t>(ceil_div(parameters, optimizer_group > 0 ? optimizer_group : group));
  if (fp32_shards) return {parameters, 0, 4 * shard, 12 * optimizer_shard};  // the master weight is the parameter
  const auto g = static_cast<std::uint64_t>(gradient_bytes);
  const auto state = static_cast<std::uint64_t>(state_bytes);
  return {parameters, 2 * (zero_stage >= 3 ? shard : p), g * (zero_stage >= 2 ? shard : p),
          state * (zero_stage >= 1 ? optimizer_shard : p)};
}

}  // namespace ptsim::workload

// Per-layer ops of a GPT/Llama/DeepSeek transformer layer (see layer_ops.hpp).
//
// Notation (per rank): N = b·s/cp tokens, N' = N/t in sequence-parallel
// regions (N' = N without SP), h hidden, a heads, g query groups, d per-head
// channels, f FFN width, t TP size; bf16 = 2 bytes. Saved tensors per op, as
// Korthikanti et al. 2022 §4.1 count them (each /t under SP, §4.2.2):
//   LN1 input 2N'h · QKV input 2N'h · Q,K 4Nh/t · softmax out 2as²b/t ·
//   dropout mask as²b/t · dropout out 2as²b/t + V 2Nh/t · proj input 2Nh/t ·
//   residual dropout mask N'h · LN2 input 2N'h · FC1 input 2N'h · GeLU input 8Nh/t ·
//   FC2 input 8Nh/t · residual dropout mask N'h.
// Flash attention replaces scores, softmax, dropout and context by one kernel
// that saves Q, K, V (6Nh/t with MHA) and the fp32 log-sum-exp of each row.
// Gemma 2's attention soft-capping is then a tanh per score inside the kernel
// (FlashAttention 2.6's softcap), no memory traffic: it is priced at the
// kernel's measured efficiency, which was measured without it (an unpriced
// cost, docs/model-sources.md); the unfused path runs it as its own pass.
//
// Tensor parallelism (Megatron-LM): a column-parallel linear takes the whole
// input (all-gathered from the SP shards under SP) and its input gradient is
// all-reduced (reduce-scattered under SP) beside the weight-gradient GEMM; a
// row-parallel linear's output is all-reduced (reduce-scattered). Under SP the
// column-parallel input is saved sharded and all-gathered again in backward
// for the weight gradient, as Megatron-LM does.
//
// Context parallelism (ring attention as Megatron-Core/Transformer Engine run
// it): the sequence is cut into 2·cp chunks, CP rank i holding chunks i and
// 2·cp−1−i so that causal work is even. Attention runs in cp steps; step j
// attends to the key/value block received j steps around the ring while the
// next block travels. With that load balancing every step of a causal model
// does half a (s/cp)² block of work, which is what a causal (s/cp)² kernel
// executes: each step is priced as one. The backward passes the key/value
// blocks and their gradients around the ring.
//
// Mixture of experts (Megatron-Core's all-to-all token dispatcher): router,
// permutation, all-to-all dispatch over EP, all-gather over expert TP, grouped
// expert GEMMs, reduce-scatter, all-to-all combine, unpermutation; shared
// experts as a TP-split dense MLP. Routing is taken as balanced: every expert
// gets its even share of tokens (or its capacity under a capacity factor,
// padded to capacity as --moe-pad-expert-input-to-capacity does).
#include "ptsim/workload/layer_ops.hpp"

#include "internal/layer_builder.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace ptsim::workload {

using internal::LayerBuilder;

namespace {
constexpr std::size_t kMixKinds = kLayerKinds / 2;  // kinds by what a layer holds, before its precision
}  // namespace

std::size_t layer_kind(const model::ModelSpec& m, const MicroShape& shape, std::int64_t layer) {
  std::size_t kind = 0;
  if (m.is_hybrid()) {
    switch (m.layer_symbol(layer)) {
      case 'M': kind = 4; break;
      case '*': kind = 5; break;
      case '-': kind = 6; break;
      default: kind = 7;  // 'E'
    }
  } else if (m.has_compressed_attention() && m.compress_ratio(layer) > 1) {
    // DeepSeek-V4: a compressed layer (ratio 4, with its indexer) or a
    // heavily compressed one; a window-only layer is windowed below.
    kind = (m.compress_ratio(layer) == 4 ? 8u : 10u) + (m.is_moe_layer(layer) ? 1u : 0u);
  } else {
    const bool windowed = m.is_sliding_window_layer(layer) || m.has_compressed_attention();
    kind = (m.is_moe_layer(layer) ? 2u : 0u) + (windowed ? 1u : 0u);
  }
  return kind + (shape.bf16_layer(layer) ? kMixKinds : 0);
}

std::string layer_kind_key(const model::ModelSpec& m, const MicroShape& shape, std::int64_t layer) {
  static constexpr std::array<const char*, kMixKinds> kNames = {"dense",     "dense.swa", "moe",       "moe.swa",
                                                                "mamba",     "attention", "mlp",       "moe_mlp",
                                                                "dense.csa", "moe.csa",   "dense.hca", "moe.hca"};
  const std::size_t kind = layer_kind(m, shape, layer);
  return kind < kMixKinds ? kNames[kind] : std::string(kNames[kind - kMixKinds]) + ".bf16";
}

namespace {

// `shape` without quantization: GEMMs and attention in bf16, every module too.
MicroShape bf16_shape(const MicroShape& shape) {
  MicroShape bf16 = shape;
  bf16.gemm_dtype = Dtype::Bf16;
  bf16.attention_dtype = Dtype::Bf16;
  bf16.quantization = strategy::Quantization{};
  bf16.fp8_weights_gathered = false;
  bf16.module_formats = {};
  return bf16;
}

}  // namespace

MicroShape mtp_layer_shape(const MicroShape& shape) {
  const std::optional<LinearFormat>& format = shape.format_of(strategy::LinearModule::Mtp);
  if (!format) return shape.gemm_dtype == Dtype::Nvfp4 ? bf16_shape(shape) : shape;
  if (!format->quantization.active) return bf16_shape(shape);
  MicroShape mtp = shape;
  mtp.gemm_dtype = format->gemm_dtype;
  mtp.quantization = format->quantization;
  mtp.module_formats = {};
  return mtp;
}

MicroShape decoder_layer_shape(const MicroShape& shape, std::int64_t layer) {
  return shape.bf16_layer(layer) ? bf16_shape(shape) : shape;
}

int fp8_gemms_per_layer(const model::ModelSpec& m, std::int64_t layer, bool separate_linears) {
  if (separate_linears) return 4 + (m.gated_mlp() ? 3 : 2);  // wq, wk, wv, wo; w1, (w3,) w2
  if (m.is_mamba_layer(layer)) return 2;                     // in_proj, out_proj
  int gemms = 0;
  // DeepSeek-V4: q_down, q_up, kv_proj, wo_b, and the indexer's wq_b at ratio 4.
  if (m.has_compressed_attention())
    gemms += 4 + (m.compress_ratio(layer) == 4 ? 1 : 0);
  else if (m.has_attention(layer))
    gemms += m.multi_latent_attention ? (m.q_lora_rank > 0 ? 5 : 4) : 2;  // + output
  if (m.has_mlp(layer)) gemms += 2;  // fc1 + fc2 (or expert fc1 + fc2)
  if (m.is_moe_layer(layer) && m.moe_shared_expert_intermediate_size > 0) gemms += 2;
  if (m.is_moe_layer(layer) && m.moe_latent_size > 0) gemms += 2;  // fc1_latent_proj, fc2_latent_proj
  return gemms;
}

MicroShape micro_shape(const model::ModelSpec& m, const strategy::ParallelConfig& c) {
  MicroShape s;
  s.micro_batch = c.micro_batch_size;
  s.seq_length = m.seq_length;
  s.tp = c.tp;
  s.cp = c.cp;
  s.sequence_parallel = c.sequence_parallel;
  s.tp_comm_overlap = c.tp_comm_overlap;
  s.async_tp_allreduce = c.async_tp_allreduce;
  s.gradient_accumulation_fusion = c.gradient_accumulation_fusion;
  s.loss_kernel = c.loss_kernel;
  s.main_grad_bytes = c.gradient_bytes();
  s.attention = c.attention;
  s.kernel_fusion = c.kernel_fusion;
  s.cp_rotate_method = c.cp_rotate_method;
  s.fp8_weights_gathered = c.fp8_param_gather && c.zero_stage == 3;
  s.gemm_dtype = c.gemm_dtype();
  s.attention_dtype = c.attention_dtype();
  s.quantization = strategy::quantization_of(c);
  s.ep = c.ep;
  s.expert_tp = c.expert_tp;
  s.capacity_factor = c.moe_capacity_factor;
  s.load_imbalance = c.moe_load_imbalance;
  s.moe_dispatcher = c.moe_dispatcher;
  s.moe_flex_backend = c.moe_flex_backend;
  s.moe_flex_num_sms = c.moe_flex_num_sms;
  s.delay_wgrad_compute = c.delay_wgrad_compute;
  s.graph_regions = c.graph_captured_regions();
  s.bf16_layers_at_start = c.bf16_layers_at_start;
  s.bf16_layers_at_end = c.bf16_layers_at_end;
  s.num_layers = m.num_layers;
  for (std::size_t i = 0; i < strategy::kLinearModules; ++i) {
    const std::optional<Dtype>& dtype = c.module_precision[i];
    if (!dtype) continue;
    s.module_formats[i] = LinearFormat{*dtype, strategy::module_quantization_of(*dtype, c.fp8_any_layout)};
  }
  return s;
}

BlockOps mtp_projection_ops(const model::ModelSpec& m, const MicroShape& shape) {
  const MicroShape depth = mtp_layer_shape(shape);  // the builder keeps a reference to it
  LayerBuilder b(m, depth, m.num_layers - 1);
  b.mtp_projection();
  return b.take();
}

BlockOps transformer_layer_ops(const model::ModelSpec& m, const MicroShape& shape, std::int64_t layer) {
  LayerBuilder b(m, shape, layer);
  // Each sublayer's ops carry the CUDA-graph region that captures them
  // (strategy::CudaGraphModules; an MoE layer tags its own).
  if (m.is_mamba_layer(layer)) {
    b.in_graph_region(strategy::kGraphMamba, [&] {
      b.mamba();
      b.residual("mamba");
    });
  }
  // Under hyper-connections each sublayer reads the streams' aggregate and
  // its output is mixed back into them (in place of the residual add).
  const auto sublayer_in = [&](const char* prefix) {
    if (m.hyper_connections()) b.hyper_connection_in(prefix);
  };
  const auto sublayer_out = [&](const char* prefix) {
    if (m.hyper_connections()) {
      b.hyper_connection_out(prefix);
    } else {
      b.residual(prefix);
    }
  };
  if (m.has_attention(layer)) {
    b.in_graph_region(strategy::kGraphAttn, [&] {
      sublayer_in("attn");
      b.input_norm();
      b.attention();
      if (m.post_sublayer_norms) b.norm("attn.post_norm");
      sublayer_out("attn");
    });
  }
  if (m.has_mlp(layer)) {
    if (m.is_moe_layer(layer)) {
      b.in_graph_region(strategy::kGraphMoeRouter, [&] {
        sublayer_in("mlp");
        b.pre_mlp_norm(layer);
      });
      b.mlp(layer);
      b.in_graph_region(strategy::kGraphMoe, [&] {
        if (m.post_sublayer_norms) b.norm("mlp.post_norm");
        sublayer_out("mlp");
      });
    } else {
      b.in_graph_region(strategy::kGraphMlp, [&] {
        sublayer_in("mlp");
        b.pre_mlp_norm(layer);
        b.mlp(layer);
        if (m.post_sublayer_norms) b.norm("mlp.post_norm");
        sublayer_out("mlp");
      });
    }
  }
  BlockOps ops = b.take();
  if (!shape.gradient_accumulation_fusion) accumulate_after_weight_gradients(ops.backward, shape.main_grad_bytes);
  if (shape.graph_regions) {
    mark_graph_replays(ops.forward, shape.graph_regions);
    mark_graph_replays(ops.backward, shape.graph_regions);
  }
  return ops;
}

}  // namespace ptsim::workload

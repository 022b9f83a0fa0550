// Attention's ops in a layer (see internal/layer_builder.hpp and
// layer_ops.cpp's header for the notation): multi-head latent attention's
// projections, fused attention, the unfused kernels, and ring attention
// under context parallelism.
#include "internal/layer_builder.hpp"

namespace ptsim::workload::internal {

void LayerBuilder::duplicated_linear(const std::string& name, double in, double out, double saved, Dtype dtype,
                                     bool input_grad) {
  // On the rank's own tokens (its SP shard): the weight is whole on every rank.
  const bool quantized = dtype != Dtype::Bf16;
  if (quantized) cast(name, Nsp_, in);
  fw_.push_back(saving(matmul(name, Nsp_, out, in, 1, dtype), saved));
  std::vector<OpSpec> bw;
  if (quantized) cast_grad(name, Nsp_, out, bw);
  if (input_grad) bw.push_back(matmul(name + ".dgrad", Nsp_, in, out, 1, dtype));
  bw.push_back(weight_grad(freeing(matmul(name + ".wgrad", in, out, Nsp_, 1, dtype), saved)));
  backward(std::move(bw));
}

void LayerBuilder::latent_attention_projections() {
  const double heads = static_cast<double>(m_.num_attention_heads);
  const double dn = static_cast<double>(m_.qk_head_dim), dr = static_cast<double>(m_.qk_pos_emb_head_dim);
  const double dv = static_cast<double>(m_.v_head_dim), ql = static_cast<double>(m_.q_lora_rank);
  const double kl = static_cast<double>(m_.kv_lora_rank);
  // One duplicated down projection of the layer input shard to `out`.
  // `saved`: bytes of input it keeps for its weight gradient: the input
  // norm's output, which recomputing "layernorm" drops (under FP8 Megatron-Core
  // makes the linears keep the bf16 input for it, set_save_original_input,
  // and quantizes it for the weight gradient in backward).
  const auto down = [&](const std::string& name, double out, double saved) {
    duplicated_linear(name, h_, out, saved, gemm_dtype_, true);
    drop(fw_.size() - 1, strategy::kRecomputeLayernorm, saved);
  };
  // A latent norm fused into its up projection to `out_total` (all heads).
  // Recomputing "mla_up_proj" reruns both (and RoPE below): Megatron-Core
  // runs them as one CheckpointWithoutOutput of the latents
  // (multi_latent_attention.py, qkv_up_proj_and_rope_apply), so the latents
  // the norm keeps stay and what the projection keeps does not.
  const auto up = [&](const std::string& latent, const std::string& name, double width, double out_total) {
    const std::size_t from = fw_.size();
    norm(latent, true, width);
    enter_tp_region(name + ".input", true, true, width);
    column(name, N_, width, out_total, Nsp_ * width, true, true, true, m_.add_bias_linear);
    rerun_from(from, strategy::kRecomputeMlaUpProj);
    drop_saved_from(from + 1, strategy::kRecomputeMlaUpProj);
  };
  // Both down projections read the same bf16 input, kept once; under FP8
  // each keeps its own quantized copy.
  if (ql > 0) {
    down("attn.q_down", ql, saved_input(Nsp_ * h_));
    up("attn.q_norm", "attn.q_up", ql, heads * (dn + dr));
  } else {
    // Without a query latent the query projection of the normalized input
    // is inside the "mla_up_proj" checkpoint, its input the checkpoint's.
    const std::size_t from = fw_.size();
    enter_tp_region("attn.q_proj.input", true, false);
    column("attn.q_proj", N_, h_, heads * (dn + dr), Nsp_ * h_, true, true, false, m_.add_bias_linear);
    rerun_from(from, strategy::kRecomputeMlaUpProj);
    drop(forward_index("attn.q_proj", from), strategy::kRecomputeLayernorm, saved_input(Nsp_ * h_));
  }
  down("attn.kv_down", kl + dr, fp8_ ? saved_input(Nsp_ * h_) : 0);
  up("attn.kv_norm", "attn.kv_up", kl, heads * (dn + dv));
  if (sp_) {
    fw_.push_back(
        collective_op("attn.k_rope.allgather", CollectiveKind::AllGather, CommGroup::TensorParallel, 2 * N_ * dr));
    backward({collective_op("attn.k_rope.reducescatter", CollectiveKind::ReduceScatter, CommGroup::TensorParallel,
                            2 * N_ * dr)});
  }
  const std::size_t rope_at = fw_.size();
  rope(heads / t_ * dr, dr);
  rerun_from(rope_at, strategy::kRecomputeMlaUpProj);
  core_attention(dn + dr, dv, 1.0);
}

void LayerBuilder::core_attention(double qk_d, double v_d, double kv_ratio) {
  const double b = static_cast<double>(shape_.micro_batch);
  const double s = static_cast<double>(shape_.seq_length);
  const double heads = static_cast<double>(m_.num_attention_heads) / t_;
  const double bh = b * heads;
  const double q_width = heads * qk_d, kv_width = heads * kv_ratio * (qk_d + v_d);
  const double lse = 4 * bh * s / static_cast<double>(shape_.cp);
  const double qkv_saved = 2 * N_ * (q_width + kv_width);
  std::size_t attention_at = fw_.size();  // the attention kernel's forward op
  if (!shape_.flash_attention()) {
    unfused_attention(qk_d, v_d, kv_ratio);
  } else if (shape_.cp > 1 && modules_) {
    torch_context_parallel_attention(bh, qk_d, v_d, kv_ratio, qkv_saved + lse, qkv_saved);
  } else if (shape_.cp > 1) {
    ring_attention(bh, qk_d, v_d, kv_ratio, qkv_saved + lse, qkv_saved);
  } else {
    const auto kernel = [&](const char* name, bool backward_pass) {
      return windowed_attention(name, bh, s, qk_d, v_d, kv_ratio, backward_pass);
    };
    // Transformer Engine's FP8 attention quantizes Q, K and V before the
    // kernel and the output's gradient before its backward (the recipe's
    // quantizer: an amax pass where it scales by the current amax, a read
    // of bf16 and a write of one copy with its scales).
    const bool fp8 = shape_.attention_dtype != Dtype::Bf16;
    const double cast = shape_.quantization.amax_bytes + 2 + shape_.quantization.copy_bytes;
    if (fp8) fw_.push_back(core_attention_op(memory_op("attn.fp8_quantize", cast * N_ * (q_width + kv_width))));
    attention_at = fw_.size();
    // Megatron-Core checkpoints core attention under selective
    // recomputation whatever its backend (core_r0.8.0 attention.py,
    // checkpoint_core_attention): the fused kernel is rerun in backward,
    // with Q, K and V kept as the checkpoint's inputs.
    fw_.push_back(core_attention_op(saving(kernel("attn.flash", false), qkv_saved + lse), qkv_saved));
    std::vector<OpSpec> grad;
    if (fp8) grad.push_back(memory_op("attn.grad_fp8_quantize", cast * N_ * heads * v_d));
    grad.push_back(freeing(kernel("attn.flash.bwd", true), qkv_saved + lse));
    backward(std::move(grad));
  }
  // Under "mla_up_proj" the Q, K and V that attention keeps are the
  // checkpoint's outputs, freed once attention has run
  // (discard_output_and_register_recompute(core_attn_out)).
  if (m_.multi_latent_attention && shape_.flash_attention())
    drop(fw_.size() - 1, strategy::kRecomputeMlaUpProj, qkv_saved);
  // When RoPE or the per-head norms make the query and key new tensors, the
  // value stays a view of the QKV projection's output (TE's SplitAlongDim
  // returns views); the core_attn checkpoint saves that view and so pins
  // the whole output, pre-RoPE query and key included, until attention's
  // backward (core_r0.8.0 attention.py, tensor_parallel.checkpoint's
  // save_for_backward; memory-oracle finding A7). Without the checkpoint
  // TE makes the strided value contiguous and the output dies. Multi-latent
  // attention builds its query, key and value anew, pinning nothing.
  if (!m_.multi_latent_attention && (m_.position_embedding == model::PositionEmbedding::Rope || m_.qk_layernorm)) {
    const double pinned = 2 * N_ * (q_width + heads * kv_ratio * qk_d);
    hold_until_backward(attention_at, strategy::kRecomputeCoreAttn, pinned);
  }
  row("attn.proj", N_, static_cast<double>(m_.num_attention_heads) * v_d, h_, shape_.flash_attention());
}

OpSpec LayerBuilder::windowed_attention(const char* name, double bh, double s, double qk_d, double v_d, double kv_ratio,
                                        bool backward_pass) const {
  const double w = static_cast<double>(m_.sliding_window);
  // A window as long as the sequence is causal attention.
  if (!sliding_ || w >= s) return fused_attention(name, bh, s, s, qk_d, v_d, kv_ratio, m_.causal, backward_pass);
  // Without a causal mask every query has its w keys (as before windows were causal here).
  if (!m_.causal) return fused_attention(name, bh, s, w, qk_d, v_d, kv_ratio, false, backward_pass);
  // A causal window of w keys: query i sees min(i + 1, w) of them, so the
  // band has w(w + 1)/2 + (s − w)·w scores (the count cudnn-frontend's
  // benchmark_single_sdpa.py flops() takes for a window); the kernel reads
  // the whole of K and V and is priced by its window (Task::shape[2]).
  OpSpec op = fused_attention(name, bh, s, s, qk_d, v_d, kv_ratio, false, backward_pass);
  op.flops *= (w * (w + 1) / 2 + (s - w) * w) / (s * s);
  op.shape[2] = static_cast<std::uint32_t>(w);
  op.flags |= taskgraph::kSlidingWindow;
  return op;
}

void LayerBuilder::unfused_attention(double d, double v_d, double kv_ratio) {
  const double b = static_cast<double>(shape_.micro_batch);
  const double s = static_cast<double>(shape_.seq_length);
  const double heads = static_cast<double>(m_.num_attention_heads) / t_;
  const double scores = b * heads * s * s;  // attention score elements per rank
  const double q_width = heads * d, k_width = heads * kv_ratio * d, v_width = heads * kv_ratio * v_d;
  const double qk_saved = 2 * N_ * (q_width + k_width);  // Q and K stay for the recomputation
  fw_.push_back(core_attention_op(saving(matmul("attn.scores", s, s, d, b * heads), qk_saved), qk_saved));
  // Soft-capping, cap·tanh(x/cap), as one fused elementwise pass over the
  // scores (read 2, write 2 bytes an element), its tanh kept for the
  // backward's 1 − tanh² (read the gradient and the tanh, write 2).
  const bool softcap = m_.attn_logit_softcapping > 0;
  if (softcap) fw_.push_back(core_attention_op(saving(memory_op("attn.softcap", scores * 4), 2 * scores)));
  // Fused scale-mask-softmax: reads and writes the scores once; keeps its output.
  fw_.push_back(core_attention_op(saving(memory_op("attn.softmax", 2 * scores * 2, KernelClass::Softmax), 2 * scores)));
  if (dropout_)  // bf16 in, bf16 out, 1-byte mask kept with the output
    fw_.push_back(core_attention_op(saving(memory_op("attn.dropout", scores * (2 + 2 + 1)), 3 * scores)));
  // The context GEMM is core attention too: Megatron-LM checkpoints the
  // whole CoreAttention module, so selective recomputation reruns it (V
  // stays saved as a checkpoint input).
  const double v_saved = 2 * N_ * v_width;
  fw_.push_back(core_attention_op(saving(matmul("attn.context", s, v_d, s, b * heads), v_saved), v_saved));
  std::vector<OpSpec> bw;
  bw.push_back(matmul("attn.context.dprobs", s, s, v_d, b * heads));
  bw.push_back(freeing(matmul("attn.context.dv", s, v_d, s, b * heads), v_saved));
  if (dropout_) bw.push_back(freeing(memory_op("attn.dropout.bwd", scores * 5), 3 * scores));
  bw.push_back(freeing(memory_op("attn.softmax.bwd", scores * 2 * 3, KernelClass::Softmax), 2 * scores));
  if (softcap) bw.push_back(freeing(memory_op("attn.softcap.bwd", scores * 6), 2 * scores));
  bw.push_back(matmul("attn.scores.dq", s, d, s, b * heads));
  bw.push_back(freeing(matmul("attn.scores.dk", s, d, s, b * heads), qk_saved));
  backward(std::move(bw));
}

void LayerBuilder::ring_attention(double bh, double qk_d, double v_d, double kv_ratio, double saved, double kept) {
  const std::int64_t cp = shape_.cp;
  const double chunk = static_cast<double>(shape_.seq_length) / static_cast<double>(cp);  // queries per sequence
  const double kv_bytes = 2 * bh * chunk * kv_ratio * (qk_d + v_d);                       // K and V of one block, bf16
  const bool causal = m_.causal;
  // Forward: step j attends to the block received j steps around the ring
  // while block j+1 travels; partial outputs merged by log-sum-exp.
  const auto steps = [&](const std::string& prefix, bool backward_pass, double bytes, std::vector<OpSpec>& out) {
    int last_recv = -1;
    for (std::int64_t j = 0; j < cp; ++j) {
      // Each send forwards the block it received (the first: its own); the
      // step after this one consumes the receive.
      if (j + 1 < cp)
        last_recv = push_cp_transfer(out, fmt_step(prefix + ".kv_send", j), fmt_step(prefix + ".kv_recv", j), bytes,
                                     last_recv, false);
      out.push_back(fused_attention(fmt_step(prefix, j), bh, chunk, chunk, qk_d, v_d, kv_ratio, causal, backward_pass));
    }
    out.push_back(memory_op(prefix + ".cp_merge", static_cast<double>(cp - 1) * 3 * 4 * bh * chunk * v_d));
  };
  std::vector<OpSpec> fw;
  steps("attn.ring", false, kv_bytes, fw);
  fw.back().saved_bytes = as_bytes(saved);
  // Megatron-Core checkpoints core attention under CP too (attention.py's
  // checkpoint_core_attention has no CP condition): the whole ring, its
  // transfers included, runs again before the backward, keeping Q, K and V.
  for (std::size_t i = 0; i < fw.size(); ++i) fw[i] = core_attention_op(fw[i], i + 1 == fw.size() ? kept : 0);
  append_block(fw_, fw);  // steps() counts `after` from the block's first op
  std::vector<OpSpec> bw;
  steps("attn.ring.bwd", true, 2 * kv_bytes, bw);  // key/value blocks and their gradients
  bw.back().freed_bytes = as_bytes(saved);
  backward(std::move(bw));
}

}  // namespace ptsim::workload::internal

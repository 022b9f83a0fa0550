// DeepSeek-V4's attention and hyper-connections as Megatron-Core runs them
// (see internal/layer_builder.hpp and layer_ops.cpp's header for the
// notation). Sources, Megatron-LM's dev branch (2026-08): megatron/core/
// transformer/experimental_attention_variant/csa.py (Compressor, CSAIndexer,
// CompressedSparseAttention), deepseek_v4_hybrid_attention.py (the
// projections) and megatron/core/transformer/hyper_connection.py (mHC).
// Megatron-Core runs this attention at TP 1 (its assert); resolve_run
// refuses TP, SP and CP with it, so N is every token of the micro-batch.
//
// Per layer of ratio r (0: the window only; 4: compressed sparse; 128:
// heavily compressed), h hidden, a heads of d, one key/value head:
//   q_down h → q_lora_rank (FP8 under FP8), q norm, q_up → a·d, a weightless
//     RMS norm over each head, kv_proj h → d, kv norm, RoPE on the last
//     qk_pos_emb_head_dim channels of each ("mla_up_proj" recomputes q_up
//     to RoPE and drops what they keep);
//   r > 1: the compressor, two bf16 projections h → coff·d (coff 2 at r = 4,
//     whose windows overlap; Megatron-Core disables FP8 for them), a softmax
//     over each window's r rows pooling their values, norm and RoPE of the
//     s/r pooled keys;
//   r = 4: the indexer, on detached inputs (weight gradients only): wq_b
//     q_lora_rank → heads·width (FP8), RoPE and a Hadamard rotation of its
//     queries, head weights h → heads (bf16), a compressor of its own width;
//     its scores over the causally valid pooled keys, the top-k, and the
//     training loss (FusedDSAIndexerLoss) whose teacher is the main
//     queries' scores over the chosen keys and whose gradient reaches the
//     indexer's queries and keys;
//   the sparse attention kernel: each query over the window's keys and the
//     pooled keys it attends to (r = 4: the top-k; r > 4: every one), the
//     keys' width d both as keys and as values; the inverse RoPE of its
//     output (a copy, out of place);
//   wo_a: each of o_groups groups of heads a·d/o_groups → o_lora_rank, a
//     torch einsum (bf16 whatever the recipe), wo_b o_groups·o_lora_rank → h
//     (a TE row linear, FP8 under FP8, keeping its bf16 input).
#include "internal/layer_builder.hpp"

#include <algorithm>

namespace ptsim::workload::internal {

namespace {
constexpr double kFloat32Bytes = 4;
}  // namespace

void LayerBuilder::compressed_attention() {
  const double b = static_cast<double>(shape_.micro_batch);
  const double s = static_cast<double>(shape_.seq_length);
  const double a = static_cast<double>(m_.num_attention_heads), d = static_cast<double>(m_.kv_channels);
  const double r = static_cast<double>(m_.qk_pos_emb_head_dim), ql = static_cast<double>(m_.q_lora_rank);
  const std::int64_t ratio = m_.compress_ratio(layer_);
  const double pooled = ratio > 1 ? std::floor(s / static_cast<double>(ratio)) : 0;  // pooled keys a sequence
  const Dtype bf16 = Dtype::Bf16;
  // The layer input's norm output: kept once in bf16 by the first linear
  // reading it; under FP8 each FP8 linear keeps its own quantized copy and
  // the bf16 linears (compressors, head weights) the bf16 one.
  const double input_bf16 = 2 * N_ * h_;
  duplicated_linear("attn.q_down", h_, ql, saved_input(N_ * h_), gemm_dtype_, true);
  norm("attn.q_norm", false, ql);
  // "mla_up_proj": q_up through RoPE as one CheckpointWithoutOutput
  // (qkv_up_proj_and_rope_apply); q_down and the q norm stay.
  const std::size_t up_from = fw_.size();
  column("attn.q_up", N_, ql, a * d, N_ * ql, true, false, false, false);
  const double q_bytes = 2 * N_ * a * d;
  fw_.push_back(saving(memory_op("attn.q_head_norm", 2 * q_bytes, KernelClass::Norm), q_bytes));
  backward({freeing(memory_op("attn.q_head_norm.bwd", 3 * q_bytes, KernelClass::Norm), q_bytes)});
  column("attn.kv_proj", N_, h_, d, fp8_ ? N_ * h_ : 0, true, false, false, false);
  norm("attn.kv_norm", false, d);
  rope(a * r, r);
  rerun_from(up_from, strategy::kRecomputeMlaUpProj);
  drop_saved_from(up_from, strategy::kRecomputeMlaUpProj);

  bool bf16_input_kept = !fp8_;  // the bf16 norm output, kept by q_down outside FP8
  const auto keep_bf16_input = [&] {
    const double bytes = bf16_input_kept ? 0 : input_bf16;
    bf16_input_kept = true;
    return bytes;
  };
  // A compressor of `width` (Compressor.forward): the two projections, the
  // windows' softmax pooling (the ratio-4 overlap transform copies both
  // into 2r-row windows first), the pooled keys' norm and RoPE. Its
  // pooling keeps the projections' outputs for its backward.
  const auto compressor = [&](const std::string& name, double width, bool input_grad) {
    const double coff = ratio == 4 ? 2 : 1;
    duplicated_linear(name + ".wkv", h_, coff * width, keep_bf16_input(), bf16, input_grad);
    duplicated_linear(name + ".wgate", h_, coff * width, 0, bf16, input_grad);
    const double projected = 2 * 2 * N_ * coff * width;     // values and scores, bf16
    const double overlap = ratio == 4 ? 2 * projected : 0;  // written into windows, read back
    const double out = 2 * b * pooled * width;
    fw_.push_back(saving(memory_op(name + ".pool", projected + overlap + out, KernelClass::Softmax), projected));
    fw_.push_back(memory_op(name + ".norm_rope", 3 * out, KernelClass::Norm));
    backward(
        {freeing(memory_op(name + ".pool.bwd", 2 * projected + overlap + 2 * out, KernelClass::Softmax), projected),
         memory_op(name + ".norm_rope.bwd", 4 * out, KernelClass::Norm)});
  };
  if (ratio > 1) compressor("attn.compressor", d, true);

  // Keys each query attends to: the window, and the pooled keys (their
  // causally valid count, all of them at the last query; the kernels take
  // the padded index list).
  const double window = std::min(static_cast<double>(m_.csa_window_size), s);
  const double topk = ratio == 4 ? std::min(static_cast<double>(m_.dsa_indexer_topk), pooled) : pooled;
  const double keys = window + topk;
  if (ratio == 4) {
    const double heads = static_cast<double>(m_.dsa_indexer_n_heads);
    const double width = static_cast<double>(m_.dsa_indexer_head_dim);
    duplicated_linear("attn.indexer.wq_b", ql, heads * width, saved_input(N_ * ql), gemm_dtype_, false);
    const double iq = 2 * N_ * heads * width;
    fw_.push_back(memory_op("attn.indexer.rope_rotate", 2 * 2 * iq));
    duplicated_linear("attn.indexer.weights_proj", h_, heads, keep_bf16_input(), bf16, false);
    compressor("attn.indexer.compressor", width, false);
    // Scores of every query head against the causally valid pooled keys,
    // priced as the GEMM of that causal half; then each query's top-k.
    const double causal_keys = pooled / 2;
    fw_.push_back(saving(matmul("attn.indexer.scores", s * heads, causal_keys, width, b, bf16),
                         iq + 4 * N_ * heads + 4 * N_ * topk));
    fw_.push_back(memory_op("attn.indexer.topk", kFloat32Bytes * N_ * pooled + 4 * N_ * topk));
    // The loss's teacher: the main queries' scores over the chosen keys.
    OpSpec teacher = attention_op("attn.indexer.teacher", b * a, s, topk, d, 0, 1 / a, false, false);
    teacher.kernel = KernelClass::SparseAttention;
    teacher.dtype = bf16;
    teacher.bytes = as_bytes(q_bytes + 2 * b * pooled * d + kFloat32Bytes * N_ * a);
    fw_.push_back(teacher);
    // The loss's gradient reaches the indexer's queries and keys only.
    backward({matmul("attn.indexer.scores.dq", s * heads, width, causal_keys, b, bf16),
              freeing(matmul("attn.indexer.scores.dk", pooled, width, s * heads / 2, b, bf16),
                      iq + 4 * N_ * heads + 4 * N_ * topk)});
  }

  // The sparse kernel: Q, the one key/value head and each query's keys
  // read once from HBM (a sequence's keys are a few MB, which L2 holds
  // while the queries gather them), O written; it keeps Q, K/V, O, the
  // log-sum-exp and the index list.
  const double kv_bytes = 2 * b * (s + pooled) * d;
  const double kept = q_bytes + kv_bytes + q_bytes + kFloat32Bytes * N_ * a + 4 * N_ * keys;
  const auto sparse = [&](const char* name, bool backward_pass) {
    OpSpec op = attention_op(name, b * a, s, keys, d, d, 1 / a, false, backward_pass);
    op.kernel = KernelClass::SparseAttention;
    op.dtype = bf16;
    op.bytes = as_bytes((backward_pass ? 2 : 1) * (2 * q_bytes + kv_bytes));
    return op;
  };
  fw_.push_back(core_attention_op(saving(sparse("attn.sparse", false), kept), kept));
  drop(fw_.size() - 1, strategy::kRecomputeMlaUpProj, q_bytes + 2 * N_ * d);
  backward({freeing(sparse("attn.sparse.bwd", true), kept)});
  fw_.push_back(memory_op("attn.inverse_rope", 2 * q_bytes));
  backward({memory_op("attn.inverse_rope.bwd", 2 * q_bytes)});

  // wo_a: a bf16 einsum over the groups, keeping its input; wo_b.
  const double groups = static_cast<double>(m_.o_groups), rank = static_cast<double>(m_.o_lora_rank);
  fw_.push_back(saving(matmul("attn.wo_a", N_, rank, a * d / groups, groups, bf16), q_bytes));
  backward({matmul("attn.wo_a.dgrad", N_, a * d / groups, rank, groups, bf16),
            weight_grad(freeing(matmul("attn.wo_a.wgrad", a * d / groups, rank, N_, groups, bf16), q_bytes))});
  row("attn.wo_b", N_, groups * rank, h_, true);
}

// The module's mappings read the n-stream residual once (its norm and the
// n·h → n² + 2n projection; the Sinkhorn iterations on n × n per token, in
// the fused Blackwell kernels Megatron-Bridge turns on there), the aggregate
// reads it again and writes the sublayer's input. Both keep the residual
// for their backward. After the sublayer, fused_h_res_h_post_bda mixes the
// residual's streams and adds the sublayer's output to each (keeping that
// output for the h_post gradient).
//
// "mhc" recomputation (hyper_connection.py's CheckpointWithoutOutputManager):
// the aggregate and the residual mix run as checkpoints whose outputs are
// freed — the sublayer norm's input and the n-stream residual the next
// module reads — and run again for the backward; the mappings are not
// rerun, and the sublayer's output stays as a checkpoint input. Megatron-
// Core restores a whole block's outputs at once when its backward begins
// (mhc_recompute_layer_num unset); ptsim reruns them layer by layer, before
// each layer's backward, and drops the stage's first input too (which
// Megatron-Core keeps: one stream a micro-batch).
void LayerBuilder::hyper_connection_in(const std::string& prefix) {
  const double n = static_cast<double>(m_.mhc_num_residual_streams);
  const double stream = 2 * N_ * n * h_, single = 2 * N_ * h_;
  const double mappings = kFloat32Bytes * N_ * (n * n + 2 * n);
  fw_.push_back(saving(memory_op(prefix + ".mhc.mappings", stream + 2 * mappings, KernelClass::Norm), stream));
  drop(fw_.size() - 1, strategy::kRecomputeMhc, stream);
  fw_.push_back(memory_op(prefix + ".mhc.aggregate", stream + single));
  rerun_from(fw_.size() - 1, strategy::kRecomputeMhc);
  aggregate_feeds_norm_ = true;
  backward({memory_op(prefix + ".mhc.aggregate.bwd", single + 3 * stream),
            freeing(memory_op(prefix + ".mhc.mappings.bwd", 3 * stream + 3 * mappings, KernelClass::Norm), stream)});
}

void LayerBuilder::hyper_connection_out(const std::string& prefix) {
  const double n = static_cast<double>(m_.mhc_num_residual_streams);
  const double stream = 2 * N_ * n * h_, single = 2 * N_ * h_;
  fw_.push_back(saving(memory_op(prefix + ".mhc.res_post_add", 2 * stream + single), single));
  rerun_from(fw_.size() - 1, strategy::kRecomputeMhc);
  backward({freeing(memory_op(prefix + ".mhc.res_post_add.bwd", 3 * stream + 2 * single), single)});
}

}  // namespace ptsim::workload::internal

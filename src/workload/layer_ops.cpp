// Per-layer ops of a GPT/Llama transformer layer (see layer_ops.hpp).
//
// Notation (per tensor-parallel rank): N = s·b tokens, h hidden, a heads, g
// query groups, d per-head channels, f FFN width, t TP size; bf16 = 2 bytes.
// Saved tensors per op, as Korthikanti et al. 2022 §4.1 count them:
//   LN1 input 2Nh · QKV input 2Nh · Q,K 4Nh/t · softmax out 2as²b/t ·
//   dropout mask as²b/t · dropout out 2as²b/t + V 2Nh/t · proj input 2Nh/t ·
//   residual dropout mask Nh · LN2 input 2Nh · FC1 input 2Nh · GeLU input 8Nh/t ·
//   FC2 input 8Nh/t · residual dropout mask Nh.
// Flash attention replaces scores, softmax, dropout and context by one kernel
// that saves Q, K, V (6Nh/t with MHA) and the fp32 log-sum-exp of each row.
#include "ptsim/workload/layer_ops.hpp"

#include <cmath>

namespace ptsim::workload {

namespace {

using taskgraph::KernelClass;

std::uint64_t as_bytes(double b) { return static_cast<std::uint64_t>(std::llround(b)); }

OpSpec saving(OpSpec op, double saved) {
  op.saved_bytes = as_bytes(saved);
  return op;
}

OpSpec freeing(OpSpec op, double freed) {
  op.freed_bytes = as_bytes(freed);
  return op;
}

OpSpec tp_all_reduce(std::string name, double bytes, bool async) {
  OpSpec op;
  op.name = std::move(name);
  op.kind = OpKind::TpAllReduce;
  op.bytes = as_bytes(bytes);
  op.async = async;
  return op;
}

}  // namespace

BlockOps transformer_layer_ops(const model::ModelSpec& m, const MicroShape& shape) {
  const double t = static_cast<double>(shape.tp);
  const double b = static_cast<double>(shape.micro_batch);
  const double s = static_cast<double>(shape.seq_length);
  const double N = s * b;
  const double h = static_cast<double>(m.hidden_size);
  const double heads = static_cast<double>(m.num_attention_heads) / t;  // per rank
  const double groups = static_cast<double>(m.num_query_groups) / t;
  const double d = static_cast<double>(m.kv_channels);
  const double q = heads * d;               // query width per rank
  const double kv = groups * d;             // key (= value) width per rank
  const double f = static_cast<double>(m.ffn_hidden_size) / t;
  const bool swiglu = m.activation == model::Activation::SwiGlu;
  const double fc1_out = swiglu ? 2 * f : f;
  const bool dropout = m.dropout > 0;
  const bool rope = m.position_embedding == model::PositionEmbedding::Rope;
  const double scores = b * heads * s * s;  // attention score elements per rank
  const bool tp = shape.tp > 1;
  const bool flash = shape.flash_attention;
  const Dtype gd = shape.gemm_dtype;  // the layer's linear GEMMs
  const double lse = 4 * b * heads * s;  // flash attention's fp32 row statistics

  BlockOps ops;
  auto& fw = ops.forward;
  auto& bw = ops.backward;

  // ---- forward --------------------------------------------------------------
  fw.push_back(saving(memory_op("ln1", 2 * N * h * 2, KernelClass::Norm), 2 * N * h));
  fw.push_back(saving(matmul("attn.qkv", N, q + 2 * kv, h, 1, gd), 2 * N * h));
  if (rope) fw.push_back(memory_op("attn.rope", 2 * 2 * N * (q + kv)));
  if (flash) {
    fw.push_back(saving(attention_op("attn.flash", b * heads, s, d, kv / q, m.causal, false),
                        2 * N * (q + 2 * kv) + lse));
  } else {
    fw.push_back(saving(matmul("attn.scores", s, s, d, b * heads), 2 * N * (q + kv)));
    // Fused scale-mask-softmax: reads and writes the scores once; keeps its output.
    fw.push_back(saving(memory_op("attn.softmax", 2 * scores * 2, KernelClass::Softmax), 2 * scores));
    if (dropout)  // bf16 in, bf16 out, 1-byte mask kept with the output
      fw.push_back(saving(memory_op("attn.dropout", scores * (2 + 2 + 1)), 3 * scores));
    fw.push_back(saving(matmul("attn.context", s, d, s, b * heads), 2 * N * kv));
  }
  fw.push_back(saving(matmul("attn.proj", N, h, q, 1, gd), 2 * N * q));
  if (tp) fw.push_back(tp_all_reduce("attn.proj.allreduce", 2 * N * h, false));
  // Bias, dropout and residual add, fused: reads two tensors, writes one (+ mask).
  fw.push_back(dropout ? saving(memory_op("attn.bias_dropout_add", N * h * 7), N * h)
                       : memory_op("attn.residual_add", N * h * 6));
  fw.push_back(saving(memory_op("ln2", 2 * N * h * 2, KernelClass::Norm), 2 * N * h));
  fw.push_back(saving(matmul("mlp.fc1", N, fc1_out, h, 1, gd), 2 * N * h));
  fw.push_back(saving(memory_op(swiglu ? "mlp.swiglu" : "mlp.gelu", 2 * N * (fc1_out + f)),
                      2 * N * fc1_out));
  fw.push_back(saving(matmul("mlp.fc2", N, h, f, 1, gd), 2 * N * f));
  if (tp) fw.push_back(tp_all_reduce("mlp.fc2.allreduce", 2 * N * h, false));
  fw.push_back(dropout ? saving(memory_op("mlp.bias_dropout_add", N * h * 7), N * h)
                       : memory_op("mlp.residual_add", N * h * 6));

  // ---- backward (reverse order; each op frees what its forward op saved) ---
  if (dropout) bw.push_back(freeing(memory_op("mlp.bias_dropout_add.bwd", N * h * 5), N * h));
  bw.push_back(matmul("mlp.fc2.dgrad", N, f, h, 1, gd));
  bw.push_back(freeing(matmul("mlp.fc2.wgrad", f, h, N, 1, gd), 2 * N * f));
  bw.push_back(freeing(memory_op(swiglu ? "mlp.swiglu.bwd" : "mlp.gelu.bwd",
                                 2 * N * (2 * fc1_out + f)),
                       2 * N * fc1_out));
  bw.push_back(matmul("mlp.fc1.dgrad", N, h, fc1_out, 1, gd));
  if (tp) bw.push_back(tp_all_reduce("mlp.fc1.dgrad.allreduce", 2 * N * h, true));
  bw.push_back(freeing(matmul("mlp.fc1.wgrad", h, fc1_out, N, 1, gd), 2 * N * h));
  bw.push_back(freeing(memory_op("ln2.bwd", 2 * N * h * 4, KernelClass::Norm), 2 * N * h));
  if (dropout) bw.push_back(freeing(memory_op("attn.bias_dropout_add.bwd", N * h * 5), N * h));
  bw.push_back(matmul("attn.proj.dgrad", N, q, h, 1, gd));
  bw.push_back(freeing(matmul("attn.proj.wgrad", q, h, N, 1, gd), 2 * N * q));
  if (flash) {
    bw.push_back(freeing(attention_op("attn.flash.bwd", b * heads, s, d, kv / q, m.causal, true),
                         2 * N * (q + 2 * kv) + lse));
  } else {
    bw.push_back(matmul("attn.context.dprobs", s, s, d, b * heads));
    bw.push_back(freeing(matmul("attn.context.dv", s, d, s, b * heads), 2 * N * kv));
    if (dropout) bw.push_back(freeing(memory_op("attn.dropout.bwd", scores * 5), 3 * scores));
    bw.push_back(freeing(memory_op("attn.softmax.bwd", scores * 2 * 3, KernelClass::Softmax), 2 * scores));
    bw.push_back(matmul("attn.scores.dq", s, d, s, b * heads));
    bw.push_back(freeing(matmul("attn.scores.dk", s, d, s, b * heads), 2 * N * (q + kv)));
  }
  if (rope) bw.push_back(memory_op("attn.rope.bwd", 2 * 2 * N * (q + kv)));
  bw.push_back(matmul("attn.qkv.dgrad", N, h, q + 2 * kv, 1, gd));
  if (tp) bw.push_back(tp_all_reduce("attn.qkv.dgrad.allreduce", 2 * N * h, true));
  bw.push_back(freeing(matmul("attn.qkv.wgrad", h, q + 2 * kv, N, 1, gd), 2 * N * h));
  bw.push_back(freeing(memory_op("ln1.bwd", 2 * N * h * 4, KernelClass::Norm), 2 * N * h));
  return ops;
}

}  // namespace ptsim::workload

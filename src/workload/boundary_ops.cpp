// Embedding, output-layer and optimizer ops (see boundary_ops.hpp).
#include "ptsim/workload/boundary_ops.hpp"

#include <cmath>

#include "internal/eager_ops.hpp"

namespace ptsim::workload {

namespace {


OpSpec with_saved(OpSpec op, double saved) {
  op.saved_bytes = as_bytes(saved);
  return op;
}

OpSpec with_freed(OpSpec op, double freed) {
  op.freed_bytes = as_bytes(freed);
  return op;
}

// Appends `block`, whose OpSpec::after counts from its first op, to `into`.
void append(std::vector<OpSpec>& into, const std::vector<OpSpec>& block) {
  const int base = static_cast<int>(into.size());
  for (OpSpec op : block) {
    if (op.after >= 0) op.after += base;
    into.push_back(std::move(op));
  }
}

// One multi-token-prediction depth (Megatron-Core's
// MultiTokenPredictionLayer, multi_token_prediction.py at d98e8a64dd): the
// embedding of the tokens one further ahead (the shared VocabParallelEmbedding),
// enorm on it and hnorm on the previous hidden state, their concatenation,
// eh_proj (a column-parallel 2h → h linear whose output is gathered over
// TP, in the depth's format: mtp_projection_ops), one transformer layer
// built as the model's last (a hybrid model: the
// layers of its MTP pattern, HybridStack at d98e8a64dd), then the depth's
// own final norm, the shared LM head and its cross-entropy (output_ops).
BlockOps mtp_depth_ops(const model::ModelSpec& m, const MicroShape& shape) {
  const double Nsp = shape.sp_tokens();
  const double h = static_cast<double>(m.hidden_size);
  const BlockOps embedding = embedding_ops(m, shape);
  std::vector<BlockOps> layers;
  const MicroShape layer_shape = mtp_layer_shape(shape);
  for (const std::int64_t kind : m.mtp_layer_kinds()) layers.push_back(transformer_layer_ops(m, layer_shape, kind));
  const BlockOps output = output_ops(m, shape);
  BlockOps ops;
  auto& fw = ops.forward;
  auto& bw = ops.backward;
  append(fw, embedding.forward);
  for (const char* norm : {"mtp.enorm", "mtp.hnorm"})
    fw.push_back(with_saved(memory_op(norm, 2 * Nsp * h * 2, taskgraph::KernelClass::Norm), 2 * Nsp * h));
  fw.push_back(memory_op("mtp.concat", 2 * Nsp * h * 2 * 2));  // read both halves, write 2h
  const BlockOps projection = mtp_projection_ops(m, shape);
  append(fw, projection.forward);
  for (const BlockOps& layer : layers) append(fw, layer.forward);
  append(fw, output.forward);

  append(bw, output.backward);
  for (auto layer = layers.rbegin(); layer != layers.rend(); ++layer) append(bw, layer->backward);
  append(bw, projection.backward);
  bw.push_back(memory_op("mtp.concat.bwd", 2 * Nsp * h * 2 * 2));  // split the 2h gradient
  for (const char* norm : {"mtp.hnorm.bwd", "mtp.enorm.bwd"})
    bw.push_back(with_freed(memory_op(norm, 2 * Nsp * h * 4, taskgraph::KernelClass::Norm), 2 * Nsp * h));
  append(bw, embedding.backward);
  return ops;
}

}  // namespace

BlockOps embedding_ops(const model::ModelSpec& m, const MicroShape& shape) {
  using taskgraph::CollectiveKind;
  const double N = shape.tokens();
  const double Nsp = shape.sp_tokens();
  const double h = static_cast<double>(m.hidden_size);
  const bool learned_positions = m.position_embedding == model::PositionEmbedding::LearnedAbsolute;
  BlockOps ops;
  // Gather N rows of the local vocabulary slice (+ position rows), write N×h;
  // the partial rows are summed over TP (scattered to the SP shards under SP).
  ops.forward.push_back(memory_op("embedding.lookup", (learned_positions ? 3 : 2) * N * h * 2,
                                  taskgraph::KernelClass::Embedding));
  if (shape.tp > 1)
    ops.forward.push_back(collective_op(shape.sequence_parallel ? "embedding.reducescatter" : "embedding.allreduce",
                                        shape.sequence_parallel ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce,
                                        CommGroup::TensorParallel, 2 * N * h));
  if (m.dropout > 0)
    ops.forward.push_back(with_saved(memory_op("embedding.dropout", Nsp * h * 5), Nsp * h));

  if (m.dropout > 0)
    ops.backward.push_back(with_freed(memory_op("embedding.dropout.bwd", Nsp * h * 5), Nsp * h));
  if (shape.sequence_parallel)
    ops.backward.push_back(collective_op("embedding.grad_allgather", CollectiveKind::AllGather,
                                         CommGroup::TensorParallel, 2 * N * h));
  // Scatter-add of N gradient rows into the embedding gradient (read-modify-write).
  OpSpec wgrad = memory_op("embedding.wgrad", (learned_positions ? 2 : 1) * N * h * 2 * 3,
                           taskgraph::KernelClass::Embedding);
  wgrad.weight_grad = true;
  ops.backward.push_back(wgrad);
  // Without accumulation fusion the dense bf16 gradients of the local
  // vocabulary slice (and of the replicated position table) are added into
  // the main gradient. With one stage and tied embeddings Megatron sums the
  // output layer's share first and adds once; counted here as two additions.
  if (!shape.gradient_accumulation_fusion)
    ops.backward.push_back(gradient_accumulation_op(
        "embedding.wgrad.accumulate",
        static_cast<double>(m.vocab_size) / static_cast<double>(shape.tp) * h +
            (learned_positions ? static_cast<double>(m.seq_length) * h : 0.0),
        shape.main_grad_bytes));
  return ops;
}

BlockOps output_ops(const model::ModelSpec& m, const MicroShape& shape) {
  using taskgraph::CollectiveKind;
  const double N = shape.tokens();
  const double Nsp = shape.sp_tokens();
  const double h = static_cast<double>(m.hidden_size);
  const double v = static_cast<double>(m.vocab_size) / static_cast<double>(shape.tp);
  const bool tp = shape.tp > 1;
  const bool sp = shape.sequence_parallel;
  BlockOps ops;
  auto& fw = ops.forward;
  auto& bw = ops.backward;
  const bool eager_norm = internal::splits_norm(m, shape.torch_modules());
  const internal::EagerOps final_norm =
      eager_norm ? internal::eager_rms_norm("final_norm", Nsp * h, Nsp) : internal::EagerOps{};
  if (eager_norm) {
    fw.insert(fw.end(), final_norm.forward.begin(), final_norm.forward.end());
  } else {
    fw.push_back(with_saved(memory_op("final_norm", 2 * Nsp * h * 2, taskgraph::KernelClass::Norm), 2 * Nsp * h));
  }
  if (sp) fw.push_back(collective_op("lm_head.input_allgather", CollectiveKind::AllGather, CommGroup::TensorParallel,
                                     2 * N * h));
  fw.push_back(with_saved(matmul("lm_head", N, v, h), 2 * Nsp * h));
  // Final logit soft-capping (Gemma 2), cap·tanh(x/cap) over the bf16
  // logits in one elementwise pass (read 2, write 2 bytes an element), the
  // tanh kept for the backward's 1 − tanh² (read the gradient and the tanh,
  // write the gradient).
  const bool softcap = m.final_logit_softcapping > 0;
  if (softcap) fw.push_back(with_saved(memory_op("lm_head.softcap", N * v * 4), 2 * N * v));
  if (shape.loss_kernel == strategy::LossKernel::TransformerEngine) {
    // Transformer Engine's parallel cross-entropy (transformer_engine/pytorch/
    // triton/cross_entropy.py before its commit 01bbe3eea of 2026-07-09): an
    // online-softmax pass reading the bf16 logits (2 bytes an element), an
    // all-gather over TP of each row's max, sum and target logit (3 fp32), a
    // pass that reads the logits again and writes the gradient over them in
    // place (2 + 2), kept for the backward, which scales it in place by the
    // loss's gradient (2 + 2).
    fw.push_back(memory_op("cross_entropy.fused.online_softmax", N * v * 2, taskgraph::KernelClass::Softmax));
    if (tp)
      fw.push_back(collective_op("cross_entropy.fused.stats_allgather", CollectiveKind::AllGather,
                                 CommGroup::TensorParallel, 12 * N * static_cast<double>(shape.tp)));
    fw.push_back(with_saved(memory_op("cross_entropy.fused", N * v * (2 + 2)), 2 * N * v));
    bw.push_back(with_freed(memory_op("cross_entropy.fused.bwd", N * v * (2 + 2)), 2 * N * v));
  } else if (shape.loss_kernel == strategy::LossKernel::FlashAttn) {
    // flash-attn's fused cross-entropy over the bf16 logits of the rank's
    // vocabulary, all of it at TP 1 (flash_attn/losses/cross_entropy.py, which llm-foundry's
    // MPT runs as its default loss_fn fused_crossentropy, modeling_mpt.py at
    // v0.3.0). flash-attn 1.0.9's xentropy_cuda_lib (csrc/xentropy, Apex's
    // kernel): the forward reads each row twice, for its max and then its sum
    // of exponentials (2 + 2 bytes a logit), writing one loss and one
    // log-sum-exp a row; the logits stay for the backward, which reads them
    // and writes the bf16 gradient (2 + 2). flash-attn 2.x's Triton kernel
    // reads the row once forward, 2 bytes a logit less. Over TP (its
    // process_group: each rank holds v of the vocabulary) each rank's
    // log-sum-exp is all-gathered (one fp32 a row) and the losses are
    // all-reduced (one fp32 a row) before the global log-sum-exp corrects them.
    fw.push_back(
        with_saved(memory_op("cross_entropy.flash_attn", N * v * (2 + 2), taskgraph::KernelClass::Softmax), 2 * N * v));
    if (tp) {
      fw.push_back(collective_op("cross_entropy.flash_attn.lse_allgather", CollectiveKind::AllGather,
                                 CommGroup::TensorParallel, 4 * N * static_cast<double>(shape.tp)));
      fw.push_back(collective_op("cross_entropy.flash_attn.loss_allreduce", CollectiveKind::AllReduce,
                                 CommGroup::TensorParallel, 4 * N));
    }
    bw.push_back(with_freed(memory_op("cross_entropy.flash_attn.bwd", N * v * (2 + 2)), 2 * N * v));
  } else if (shape.torch_modules()) {
    // torchtitan's loss (train.py at 9dec370): F.cross_entropy over
    // pred.float(): the cast (read 2, write 4 bytes a logit), log_softmax
    // (4 + 4, its fp32 output kept), nll_loss over the targets; backward:
    // the zero-filled fp32 gradient (write 4), nll's scatter, log_softmax's
    // backward (read 8, write 4), the cast back to bf16 (4 + 2). Over TP the
    // vocabulary-parallel loss reduces each row's max and sum.
    fw.push_back(memory_op("cross_entropy.float", N * v * (2 + 4)));
    if (tp)
      fw.push_back(
          collective_op("cross_entropy.allreduce.max", CollectiveKind::AllReduce, CommGroup::TensorParallel, 4 * N));
    if (tp)
      fw.push_back(collective_op("cross_entropy.allreduce.sum_exp", CollectiveKind::AllReduce,
                                 CommGroup::TensorParallel, 4 * N));
    fw.push_back(with_saved(memory_op("cross_entropy.log_softmax", N * v * (4 + 4), taskgraph::KernelClass::Softmax),
                            4 * N * v));
    fw.push_back(memory_op("cross_entropy.nll", N * (4 + 8 + 4)));
    bw.push_back(memory_op("cross_entropy.nll.bwd_zero", N * v * 4));
    bw.push_back(memory_op("cross_entropy.nll.bwd_scatter", N * (4 + 8 + 4)));
    bw.push_back(memory_op("cross_entropy.log_softmax.bwd", N * v * (8 + 4), taskgraph::KernelClass::Softmax));
    bw.push_back(with_freed(memory_op("cross_entropy.float.bwd", N * v * (4 + 2)), 4 * N * v));
  } else {
    // Megatron's vocab-parallel cross-entropy, kernel by kernel, on fp32
    // logits (megatron/mpu/cross_entropy.py of 2021 and
    // megatron/core/tensor_parallel/cross_entropy.py of Megatron-Core r0.8 alike:
    // the model calls it on logits.float()): the cast (read 2, write 4 bytes an
    // element), max (read 4), subtract the max in place (read 4, write 4), exp
    // into the same buffer (4 + 4), sum (4), divide by the sum in place (4 + 4):
    // the softmax kept for the backward.
    const auto tp_allreduce = [&](const char* what) {
      if (tp)
        fw.push_back(collective_op(std::string("cross_entropy.allreduce.") + what, CollectiveKind::AllReduce,
                                   CommGroup::TensorParallel, 4 * N));
    };
    fw.push_back(memory_op("cross_entropy.cast", N * v * (2 + 4)));
    fw.push_back(memory_op("cross_entropy.max", N * v * 4, taskgraph::KernelClass::Softmax));
    tp_allreduce("max");
    fw.push_back(memory_op("cross_entropy.sub_max", N * v * (4 + 4)));
    fw.push_back(memory_op("cross_entropy.exp", N * v * (4 + 4)));
    fw.push_back(memory_op("cross_entropy.sum", N * v * 4, taskgraph::KernelClass::Softmax));
    tp_allreduce("target");
    tp_allreduce("sum_exp");
    fw.push_back(with_saved(memory_op("cross_entropy.normalize", N * v * (4 + 4)), 4 * N * v));
    // Backward: the softmax, less one at each target, scaled by the loss's
    // gradient in place (4 + 4), then autograd's cast of the fp32 gradient back
    // to the bf16 logits (read 4, write 2), after which the buffer is free.
    bw.push_back(memory_op("cross_entropy.bwd", N * v * (4 + 4)));
    bw.push_back(with_freed(memory_op("cross_entropy.bwd.cast", N * v * (4 + 2)), 4 * N * v));
  }
  if (softcap) bw.push_back(with_freed(memory_op("lm_head.softcap.bwd", N * v * 6), 2 * N * v));
  if (sp) {
    OpSpec ag = collective_op("lm_head.input_allgather.bwd", CollectiveKind::AllGather, CommGroup::TensorParallel,
                              2 * N * h, true);
    ag.weight_grad = true;
    bw.push_back(ag);
  }
  bw.push_back(matmul("lm_head.dgrad", N, h, v));
  if (tp)
    bw.push_back(collective_op(sp ? "lm_head.dgrad.reducescatter" : "lm_head.dgrad.allreduce",
                               sp ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce,
                               CommGroup::TensorParallel, 2 * N * h, shape.async_dgrad_reduce()));
  OpSpec wgrad = with_freed(matmul("lm_head.wgrad", v, h, N), 2 * Nsp * h);
  wgrad.weight_grad = true;
  bw.push_back(wgrad);
  if (eager_norm) {
    bw.insert(bw.end(), final_norm.backward.begin(), final_norm.backward.end());
  } else {
    bw.push_back(with_freed(memory_op("final_norm.bwd", 2 * Nsp * h * 4, taskgraph::KernelClass::Norm), 2 * Nsp * h));
  }
  if (!shape.gradient_accumulation_fusion) accumulate_after_weight_gradients(bw, shape.main_grad_bytes);
  return ops;
}

BlockOps last_stage_ops(const model::ModelSpec& m, const MicroShape& shape) {
  BlockOps ops = output_ops(m, shape);
  for (std::int64_t d = 0; d < m.mtp_num_layers; ++d) {
    const BlockOps depth = mtp_depth_ops(m, shape);
    append(ops.forward, depth.forward);
    std::vector<OpSpec> backward = depth.backward;  // the deeper depth's backward runs first
    append(backward, ops.backward);
    ops.backward = std::move(backward);
  }
  return ops;
}

OpSpec optimizer_step_op(std::int64_t parameters, int gradient_bytes, int weight_bytes, int state_bytes) {
  return memory_op("optimizer.adam",
                   (2.0 * state_bytes + gradient_bytes + weight_bytes) * static_cast<double>(parameters),
                   taskgraph::KernelClass::Optimizer);
}

}  // namespace ptsim::workload

// The builder of one transformer layer's ops (layer_ops.cpp: norms,
// linears with their TP collectives, FP8 casts, the dense MLP and the
// layer's assembly; layer_attention.cpp: multi-latent, fused, unfused and
// ring attention; layer_moe.cpp: the MoE layer). The notation and the
// sources are layer_ops.cpp's header. Private to workload/.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "internal/eager_ops.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/workload/layer_ops.hpp"

namespace ptsim::workload::internal {

using taskgraph::CollectiveKind;
using taskgraph::KernelClass;

inline OpSpec saving(OpSpec op, double saved) {
  op.saved_bytes = as_bytes(saved);
  return op;
}

inline OpSpec freeing(OpSpec op, double freed) {
  op.freed_bytes = as_bytes(freed);
  return op;
}

inline OpSpec weight_grad(OpSpec op) {
  op.weight_grad = true;
  return op;
}

// Core attention, which recomputing core_attn reruns; under it the op
// keeps `kept` bytes of what it saves (the checkpoint's inputs).
inline OpSpec core_attention_op(OpSpec op, double kept = 0) {
  op.rerun_by |= strategy::kRecomputeCoreAttn;
  const std::uint64_t k = as_bytes(kept);
  if (op.saved_bytes > k) op.drops.push_back({strategy::kRecomputeCoreAttn, op.saved_bytes - k});
  return op;
}

// A transfer of `bytes` to the next rank of the CP ring: its send, after op
// `after` of `ops` (-1: the last kernel), and its receive, which the op after
// next consumes or, `detached`, the op that names it as `after`. Returns the
// receive's index.
inline int push_cp_transfer(std::vector<OpSpec>& ops, std::string send_name, std::string recv_name, double bytes,
                            int after, bool detached) {
  OpSpec send;
  send.name = std::move(send_name);
  send.kind = OpKind::Send;
  send.collective = CollectiveKind::PointToPoint;
  send.group = CommGroup::ContextParallel;
  send.bytes = as_bytes(bytes);
  send.after = after;
  ops.push_back(send);
  OpSpec recv = send;
  recv.name = std::move(recv_name);
  recv.kind = OpKind::Recv;
  recv.after = -1;
  (detached ? recv.detached : recv.async) = true;
  ops.push_back(std::move(recv));
  return static_cast<int>(ops.size()) - 1;
}

// Appends `block`, whose OpSpec::after counts from the block's first op, to
// `into`, where it counts from the list's first.
inline void append_block(std::vector<OpSpec>& into, const std::vector<OpSpec>& block) {
  const int base = static_cast<int>(into.size());
  for (OpSpec op : block) {
    if (op.after >= 0) op.after += base;
    into.push_back(std::move(op));
  }
}

// Builds a layer's ops: forward in order, backward collected in reverse
// (each backward() call adds a group that take() places before the earlier ones).
class LayerBuilder {
 public:
  // The builder keeps a reference to the shape: a temporary one would dangle.
  LayerBuilder(const model::ModelSpec& m, MicroShape&& shape, std::int64_t layer) = delete;
  LayerBuilder(const model::ModelSpec& m, const MicroShape& shape, std::int64_t layer)
      : sliding_(m.is_sliding_window_layer(layer)),
        layer_(layer),
        m_(m),
        shape_(shape),
        t_(static_cast<double>(shape.tp)),
        N_(shape.tokens()),
        Nsp_(shape.sp_tokens()),
        h_(static_cast<double>(m.hidden_size)),
        tp_(shape.tp > 1),
        sp_(shape.sequence_parallel),
        dropout_(m.dropout > 0),
        fp8_(shape.quantization.active),
        modules_(shape.torch_modules()),
        eager_(shape.kernel_fusion == strategy::KernelFusion::Eager),
        torchao_(modules_ && fp8_),
        q_(shape.quantization),
        gemm_dtype_(shape.gemm_dtype) {}

  // Builds what `build` adds with the linears of `module` in their own
  // format where the run gives them one (MicroShape::format_of: Megatron-
  // Core's quant_recipe matchers): their GEMMs' dtype, their casts, the
  // quantized copies they gather and keep. Everything else keeps the run's.
  template <typename Build>
  void in_format(strategy::LinearModule module, Build build) {
    const std::optional<LinearFormat>& format = shape_.format_of(module);
    if (!format) {
      build();
      return;
    }
    const bool fp8 = fp8_;
    const strategy::Quantization q = q_;
    const Dtype dtype = gemm_dtype_;
    fp8_ = format->quantization.active;
    q_ = format->quantization;
    gemm_dtype_ = format->gemm_dtype;
    build();
    fp8_ = fp8;
    q_ = q;
    gemm_dtype_ = dtype;
  }

  BlockOps take() {
    BlockOps ops;
    ops.forward = std::move(fw_);
    for (auto it = bw_groups_.rbegin(); it != bw_groups_.rend(); ++it) append_block(ops.backward, *it);
    return ops;
  }

  // What `build` adds, forward and backward, in CUDA-graph region `region`
  // (OpSpec::graph_region).
  template <class Build>
  void in_graph_region(std::uint8_t region, Build&& build) {
    const std::size_t fw0 = fw_.size(), bw0 = bw_groups_.size();
    build();
    tag_graph_regions(fw0, bw0, region, [](const std::string&) -> std::uint8_t { return 0; });
  }

  // `into_fp8_linear`: the norm is fused into the FP8 linear after it
  // (Transformer Engine's LayerNormLinear: Megatron-Core's QKV and dense FC1).
  // Under delayed scaling it writes fp8 directly (read 2, write 1 bytes an
  // element); under current scaling it writes bf16 and the tensor's amax,
  // which the linear's quantize then uses (TE normalization.cpp: FULLY_FUSED
  // against FUSED_NORM_AMAX_FP8); under the block-scaled recipes it writes
  // bf16 and the quantize runs apart (UNFUSED, unless cuDNN's MXFP8 norm is
  // switched on by NVTE_NORM_FWD_USE_CUDNN, which this does not model).
  // `width`: the normalized tensor's width (default: the hidden size).
  void norm(const std::string& name, bool into_fp8_linear = false, double width = 0) {
    const double w = width > 0 ? width : h_;
    if (splits_norm(m_, eager_)) {
      add(eager_rms_norm(name, Nsp_ * w, Nsp_));
      return;
    }
    const double out_bytes = into_fp8_linear && q_.delayed ? 1 : 2;
    fw_.push_back(saving(memory_op(name, Nsp_ * w * (2 + out_bytes), KernelClass::Norm), 2 * Nsp_ * w));
    // The sublayer norm after a hyper-connection's aggregate: its input is
    // the aggregate's output, which "mhc" discards (hyper_connection_in).
    if (aggregate_feeds_norm_) {
      drop(fw_.size() - 1, strategy::kRecomputeMhc, 2 * Nsp_ * w);
      aggregate_feeds_norm_ = false;
    }
    backward({freeing(memory_op(name + ".bwd", 2 * Nsp_ * w * 4, KernelClass::Norm), 2 * Nsp_ * w)});
  }

  // Bias, dropout and residual add, fused: reads two tensors, writes one (+ mask).
  void residual(const std::string& prefix) {
    if (dropout_) {
      fw_.push_back(saving(memory_op(prefix + ".bias_dropout_add", Nsp_ * h_ * 7), Nsp_ * h_));
      backward({freeing(memory_op(prefix + ".bias_dropout_add.bwd", Nsp_ * h_ * 5), Nsp_ * h_)});
    } else {
      fw_.push_back(memory_op(prefix + ".residual_add", Nsp_ * h_ * 6));
    }
  }

  // The TP region's entry for an input of width `width` that column-parallel
  // linears consume: all-gathered under SP (forward); its gradient reduced in
  // backward by the last column-parallel linear's dgrad (see column()).
  // With TP communication overlap the gather runs in chunks beside the GEMM
  // that consumes it (async: the op after that GEMM waits). `fp8_linear`: its
  // consumer is a Transformer Engine linear, which under FP8 quantizes the
  // shard and gathers fp8 (quantize_shard; TE linear.py and
  // layernorm_linear.py alike); `from_norm`: with the norm before it fused in.
  // `width`: the input's width (default: the hidden size).
  void enter_tp_region(const std::string& prefix, bool fp8_linear = false, bool from_norm = false, double width = 0) {
    if (!sp_) return;
    const double w = width > 0 ? width : h_;
    const bool fp8 = fp8_ && fp8_linear;
    if (fp8) quantize_shard(fw_, prefix, w, from_norm);
    fw_.push_back(collective_op(prefix + ".allgather", CollectiveKind::AllGather, CommGroup::TensorParallel,
                                (fp8 ? q_.copy_bytes : 2) * N_ * w, shape_.tp_comm_overlap));
  }

  // A linear's input kept for its weight gradient: bf16, or under FP8 the
  // quantized copy Transformer Engine keeps instead (TE linear.py and
  // layernorm_linear.py keep only the data the wgrad GEMM reads, per tensor
  // the row-wise copy it transposes, block-scaled the column-wise one; the
  // bf16 input is freed unless another op keeps it).
  double saved_input(double elements) const { return (fp8_ ? q_.copy_bytes : 2) * elements; }

  // Column-parallel linear of `in` → `out_total` (split t ways). `saved` is the
  // number of input elements kept for its weight gradient (0: another op
  // already saved them).
  // `reduce_input_grad`: this linear's dgrad completes the region input's
  // gradient, which is all-reduced (reduce-scattered under SP) beside its wgrad.
  // `norm_fused`: the norm before it is fused in (see norm()); under FP8 the
  // input then arrives quantized and only its transpose for the weight
  // gradient is made here (delayed scaling: read 1, write 1 bytes an
  // element; current scaling: the quantize itself, read 2, write 1 + 1).
  // Under SP a gathered input was quantized before the gather, fused norm or
  // not (enter_tp_region), and the transpose follows the backward's
  // regather, which moves fp8 too.
  // `biased`: the linear carries a bias (add_bias_linear; the QKV
  // projection also with add_qkv_bias), whose gradient is reduced in backward.
  // torchtitan's linears of one input (wq, wk and wv; w1 and w3) each cast
  // it to fp8 in torchao's code; under torch.compile AOTAutograd's
  // common-subexpression elimination of the joint graph (fx_graph_cse,
  // functorch config cse=True) leaves one cast, the first linear's: those
  // after it (`saved` 0, their input kept by the first) cast nothing.
  void column(const std::string& name, double rows, double in, double out_total, double saved, bool reduce_input_grad,
              bool gathered_input, bool norm_fused, bool biased) {
    const double out = out_total / t_;
    const double saved_bytes = saved_input(saved);
    const bool fp8_input = fp8_ && (norm_fused || (sp_ && gathered_input));
    const bool cast_shared = torchao_ && saved == 0;
    if (cast_shared) {
      // the first linear's fp8 input serves this one too
    } else if (!fp8_input) {
      cast(name, rows, in);
    } else if (!sp_) {
      // From the fused norm: delayed scaling transposes the fp8 it wrote
      // (where the GPU needs a transpose); the others quantize its bf16
      // output both ways (current scaling with the amax the norm computed).
      if (!q_.delayed)
        fw_.push_back(memory_op(name + q(".", "cast"), rows * in * q_.norm_output_cast_bytes()));
      else if (q_.transposes())
        fw_.push_back(memory_op(name + q(".", "transpose"), rows * in * 2 * q_.copy_bytes));
    }
    torchao_weight_cast(name, in * out);
    fw_.push_back(saving(matmul(name, rows, out, in, 1, gemm_dtype_), saved_bytes));
    std::vector<OpSpec> bw;
    cast_grad(name, rows, out, bw);
    torchao_weight_for_dgrad(bw, name, in * out);
    // Under SP the weight gradient needs the whole input again.
    const bool regather = sp_ && gathered_input;
    if (regather) {
      OpSpec ag = collective_op(name + ".input_allgather", CollectiveKind::AllGather, CommGroup::TensorParallel,
                                (fp8_input ? q_.copy_bytes : 2) * N_ * in, true);
      ag.weight_grad = true;
      bw.push_back(ag);
    }
    const int dgrad = static_cast<int>(bw.size());
    bw.push_back(matmul(name + ".dgrad", rows, in, out, 1, gemm_dtype_));
    rescale_gradient(bw, name + ".dgrad", rows * in, false);
    if (regather && fp8_input && q_.after_gather_bytes > 0) {
      // Made once the regather is done; the reduction below waits for the
      // dgrad only, and the weight-gradient GEMM runs beside it as before.
      bw.push_back(weight_grad(memory_op(name + ".input" + after_gather_suffix(), rows * in * q_.after_gather_bytes)));
    }
    if (reduce_input_grad && tp_) {
      OpSpec reduce = collective_op(name + ".dgrad." + (sp_ ? "reducescatter" : "allreduce"),
                                    sp_ ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce,
                                    CommGroup::TensorParallel, 2 * N_ * in, shape_.async_dgrad_reduce());
      if (regather && fp8_input) reduce.after = dgrad;
      bw.push_back(reduce);
    }
    bw.push_back(weight_grad(freeing(matmul(name + ".wgrad", in, out, rows, 1, gemm_dtype_), saved_bytes)));
    rescale_gradient(bw, name + ".wgrad", in * out, true);
    if (biased) bw.push_back(weight_grad(bias_grad(name, rows, out)));
    backward(std::move(bw));
  }

  // Row-parallel linear of `in_total` (split t ways) → `out`; its output is
  // all-reduced (reduce-scattered under SP) before the residual.
  // `input_kept`: another op keeps the bf16 input for its own backward (fused
  // attention its output), so under FP8 the linear's copy comes beside it;
  // counted here, freed with the linear's weight gradient.
  void row(const std::string& name, double rows, double in_total, double out, bool input_kept = false) {
    const double in = in_total / t_;
    const double saved = saved_input(rows * in) + (fp8_ && input_kept ? 2 * rows * in : 0);
    cast(name, rows, in);
    torchao_weight_cast(name, in * out);
    const int before_gemm = static_cast<int>(fw_.size()) - 1;
    fw_.push_back(saving(matmul(name, rows, out, in, 1, gemm_dtype_), saved));
    if (tp_) {
      OpSpec reduce = collective_op(name + (sp_ ? ".reducescatter" : ".allreduce"),
                                    sp_ ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce,
                                    CommGroup::TensorParallel, 2 * N_ * out);
      // Pipelined with the GEMM under TP communication overlap: each chunk
      // is reduced while the next is computed, so it starts with the GEMM.
      if (shape_.tp_comm_overlap && before_gemm >= 0) reduce.after = before_gemm;
      fw_.push_back(reduce);
    }
    std::vector<OpSpec> bw;
    // The bias is added after the reduction, on the SP shard (fused with
    // dropout and the residual): its gradient is reduced from that shard.
    if (m_.add_bias_linear) bw.push_back(bias_grad(name, Nsp_, out));
    // Under SP and FP8 the output gradient is quantized on its shard and
    // gathered in fp8; its transpose for the weight gradient is made after.
    const bool fp8_gather = sp_ && fp8_;
    if (fp8_gather) quantize_shard(bw, name + ".grad", out, false);
    if (sp_)
      bw.push_back(collective_op(name + ".grad_allgather", CollectiveKind::AllGather, CommGroup::TensorParallel,
                                 (fp8_gather ? q_.grad_gather_copies() * q_.copy_bytes : 2) * N_ * out,
                                 shape_.tp_comm_overlap));
    if (!fp8_gather) cast_grad(name, rows, out, bw);
    torchao_weight_for_dgrad(bw, name, in * out);
    bw.push_back(matmul(name + ".dgrad", rows, in, out, 1, gemm_dtype_));
    rescale_gradient(bw, name + ".dgrad", rows * in, false);
    if (fp8_gather && q_.after_gather_bytes > 0)
      bw.push_back(weight_grad(memory_op(name + ".grad" + after_gather_suffix(), rows * out * q_.after_gather_bytes)));
    bw.push_back(weight_grad(freeing(matmul(name + ".wgrad", in, out, rows, 1, gemm_dtype_), saved)));
    rescale_gradient(bw, name + ".wgrad", in * out, true);
    backward(std::move(bw));
  }

  void attention() {
    if (m_.has_compressed_attention()) {
      compressed_attention();  // layer_csa.cpp
    } else if (m_.multi_latent_attention) {
      latent_attention_projections();  // gathers its latents, not the layer input
    } else {
      in_format(strategy::LinearModule::Attention, [&] { standard_attention(); });
    }
  }

  // Grouped-query (or multi-head) attention: the QKV projection, core
  // attention and the output projection (core_attention()).
  void standard_attention() {
    const double d = static_cast<double>(m_.kv_channels);
    const double q = static_cast<double>(m_.num_attention_heads) * d;
    const double kv = static_cast<double>(m_.num_query_groups) * d;
    // torchtitan's attention projects with three linears of one input, whose
    // input gradients autograd sums: eager, two adds (read 4, write 2 bytes
    // an element); compiled, one kernel reading the three and writing one.
    // After the projections' backward (a group added earlier runs later).
    if (eager_)
      backward({memory_op("attn.input_grad.add_k", 6 * N_ * h_), memory_op("attn.input_grad.add_v", 6 * N_ * h_)});
    else if (modules_)
      backward({memory_op("attn.input_grad.add", 8 * N_ * h_)});
    enter_tp_region("attn.input", true, true);
    if (modules_) {
      // torchtitan's wq, wk and wv, in that order (selective op
      // checkpointing counts them); the input kept once, and its gradient
      // reduced after the last of their backward, wq's.
      column("attn.wq", N_, h_, q, Nsp_ * h_, true, true, true, m_.qkv_bias());
      column("attn.wk", N_, h_, kv, 0, false, false, true, m_.qkv_bias());
      column("attn.wv", N_, h_, kv, 0, false, false, true, m_.qkv_bias());
    } else {
      column("attn.qkv", N_, h_, q + 2 * kv, Nsp_ * h_, true, true, true, m_.qkv_bias());
    }
    if (m_.qk_layernorm) {
      fw_.push_back(
          saving(memory_op("attn.qk_norm", 2 * N_ * (q + kv) / t_ * 2, KernelClass::Norm), 2 * N_ * (q + kv) / t_));
      backward({freeing(memory_op("attn.qk_norm.bwd", 2 * N_ * (q + kv) / t_ * 4, KernelClass::Norm),
                        2 * N_ * (q + kv) / t_)});
    }
    if (m_.position_embedding == model::PositionEmbedding::Rope) rope(q / t_, kv / t_);
    if (modules_ && kv < q) {
      // The same copies under torch.compile: Inductor writes the expanded
      // tensor that attention is handed (it may fuse the key's with RoPE,
      // the bytes the same).
      add(eager_repeat_kv(N_ * kv / t_, N_ * q / t_));
      core_attention(d, d, 1.0);  // every query head with its own key and value
    } else {
      core_attention(d, d, kv / q);
    }
  }

  // The layer's input norm: fused into the QKV linear (Megatron-Core's TE
  // spec, input_layernorm an IdentityOp), except before multi-latent
  // attention, whose down projections take a TENorm's output; that one
  // recomputing "layernorm" reruns (transformer_layer.py: only a norm that
  // is not an IdentityOp), its consumers dropping its output (see
  // latent_attention_projections()).
  void input_norm() {
    const std::size_t at = fw_.size();
    const bool apart = m_.multi_latent_attention || m_.has_compressed_attention();
    norm("ln1", !apart);
    if (apart) rerun_from(at, strategy::kRecomputeLayernorm);
  }

  // A hyper-connection module around sublayer `prefix` (layer_csa.cpp):
  // before it, the mappings from the n-stream residual and the aggregate
  // the sublayer reads; after it, the residual mix with the sublayer's
  // output added back into the n streams (in place of residual()).
  void hyper_connection_in(const std::string& prefix);
  void hyper_connection_out(const std::string& prefix);
  // The pre-MLP norm: fused into a dense MLP's FC1, apart before an MoE
  // layer (its router and shared experts read it), where recomputing
  // "layernorm" reruns it.
  void pre_mlp_norm(std::int64_t layer) {
    pre_mlp_norm_ = fw_.size();
    const bool moe_layer = m_.is_moe_layer(layer);
    norm("ln2", !moe_layer);
    if (moe_layer) rerun_from(pre_mlp_norm_, strategy::kRecomputeLayernorm);
  }

  // Recomputing "mlp" checkpoints a dense layer's MLP module (its FC1 with
  // the pre-MLP norm fused in, activation, FC2 and their TP communication):
  // only the module's input, which the norm keeps, stays; everything runs
  // again (transformer_layer.py: tensor_parallel.checkpoint, te_checkpoint
  // under FP8; not for MoE layers).
  void mlp(std::int64_t layer) {
    if (m_.is_moe_layer(layer)) {
      moe();
    } else {
      dense_mlp("mlp", static_cast<double>(m_.ffn_hidden_size), true);
      rerun_from(pre_mlp_norm_, strategy::kRecomputeMlp);
      drop_saved_from(pre_mlp_norm_ + 1, strategy::kRecomputeMlp);
    }
  }

  // A hybrid model's Mamba-2 mixer with its fused pre-norm (layer_mamba.cpp).
  void mamba();

  // An MTP depth's eh_proj (MultiTokenPredictionLayer._concat_embeddings,
  // multi_token_prediction.py at d98e8a64dd): a column-parallel 2h → h
  // linear on the concatenated norms' output, inside the depth's
  // quantization context (the shape's: mtp_layer_shape), its output
  // gathered over TP.
  void mtp_projection() {
    const double w = 2 * h_;
    enter_tp_region("mtp.eh_proj.input", true, false, w);
    column("mtp.eh_proj", N_, w, h_, Nsp_ * w, true, true, false, false);
    if (!tp_) return;
    fw_.push_back(collective_op("mtp.eh_proj.output_allgather", CollectiveKind::AllGather, CommGroup::TensorParallel,
                                2 * N_ * h_));
    backward({collective_op("mtp.eh_proj.output_allgather.bwd", CollectiveKind::ReduceScatter,
                            CommGroup::TensorParallel, 2 * N_ * h_)});
  }

 private:
  // A linear bias's gradient: the output gradient summed over the `rows`
  // tokens, one reduction kernel reading rows·width bf16 values. Megatron-LM
  // runs it as its own kernel for every biased linear: `grad_output.sum(dim=0)`
  // in the linear's backward (qkv), and autograd's sum over the broadcast
  // dimension where the bias is added outside the GEMM (fc1 in the fused
  // bias-GeLU, proj and fc2 in the fused bias-dropout-add).
  static OpSpec bias_grad(const std::string& name, double rows, double width) {
    return memory_op(name + ".bias_grad", 2 * rows * width + 2 * width);
  }

  // FP8 GEMMs (Transformer Engine): the input is cast to fp8 with its
  // transpose for the weight gradient (read 2, write 1 + 1 bytes per element),
  // or block-scaled in both directions with their scales; the output
  // gradient likewise in backward. Current scaling first reads the tensor
  // once more for its amax (TE quantizer.cpp: nvte_compute_amax, then the
  // scale, then the cast: three kernels of one quantize call, priced here as
  // one task of their bytes). strategy::Quantization holds the bytes.
  double cast_bytes() const { return q_.cast_bytes(); }
  // The pass that makes a gathered copy the column-wise operand.
  std::string after_gather_suffix() const { return q("_", q_.per_tensor ? "transpose" : "swap"); }
  // A quantization kernel's name part: ".fp8_cast", "_fp4_swap", ...
  std::string q(const char* sep, const char* what) const { return sep + std::string(q_.tag) + "_" + what; }
  void cast(const std::string& name, double rows, double cols) {
    if (fp8_) fw_.push_back(memory_op(name + q(".", "cast"), rows * cols * cast_bytes()));
  }
  void cast_grad(const std::string& name, double rows, double cols, std::vector<OpSpec>& bw) {
    if (fp8_) bw.push_back(memory_op(name + q(".grad_", "cast"), rows * cols * cast_bytes()));
  }
  // torchao's Float8Linear (torchao/float8/float8_linear.py at eab345c,
  // tensorwise: manual_float8_matmul_with_args_in_float8) casts its weight
  // in every forward, not once a step as Transformer Engine does: the amax
  // (read 2 bytes a weight) and the cast (read 2, write 1), the fp8 weight
  // kept for the backward (ctx.save_for_backward); a weight that FSDP2
  // gathered in fp8 (enable_fsdp_float8_all_gather) arrives cast. The input
  // gradient's GEMM takes it as torch._scaled_mm's second operand, which
  // must be column-major (float8_ops.py preprocess_addmm: b.t().contiguous().t(),
  // read 1, write 1 bytes a weight) on every GPU, as PyTorch requires.
  // Row-wise scaling (q_.casts_each_copy) keeps no fp8 weight: the
  // backward casts the bf16 weight again along its other direction, an
  // amax pass and a cast (float8_linear.py: "to avoid saving float8 weight
  // from forward to backward"), which gives _scaled_mm its operand as it
  // needs it.
  void torchao_weight_cast(const std::string& name, double weights) {
    if (!torchao_ || shape_.fp8_weights_gathered) return;
    const OpSpec cast = memory_op(name + ".fp8_weight_cast", 5 * weights);
    fw_.push_back(q_.casts_each_copy ? cast : saving(cast, weights));
  }
  void torchao_weight_for_dgrad(std::vector<OpSpec>& bw, const std::string& name, double weights) const {
    if (!torchao_) return;
    if (q_.casts_each_copy) {
      bw.push_back(memory_op(name + ".fp8_weight_cast_for_dgrad", 5 * weights));
      return;
    }
    const OpSpec op = memory_op(name + ".fp8_weight_transpose", 2 * weights);
    bw.push_back(shape_.fp8_weights_gathered ? op : freeing(op, weights));
  }
  // Under row-wise scaling a gradient GEMM's output multiplied by its
  // operands' scales after it (Quantization::rescales_gradient_gemms): read
  // and write 2 bytes an element of the output.
  void rescale_gradient(std::vector<OpSpec>& bw, const std::string& gemm, double elements, bool weight_gradient) {
    if (!torchao_ || !q_.rescales_gradient_gemms) return;
    const OpSpec op = memory_op(gemm + ".fp8_rescale", 4 * elements);
    bw.push_back(weight_gradient ? weight_grad(op) : op);
  }

  // A tensor quantized on its sequence-parallel shard and gathered over TP in
  // fp8 (TE distributed.py, _all_gather_fp8: the shard is cast row-wise, read
  // 2 and write 1 bytes an element, and the gather moves one byte an
  // element; block-scaled, _all_gather_mxfp8 and
  // _start_all_gather_fp8_blockwise: the shard is quantized both ways and
  // the gather moves the copies the GEMMs need, with their scales). Under
  // current scaling the shard's amax is all-reduced over TP first so that
  // every shard shares one scale (TE sets the quantizer's amax reduction
  // group to the TP group for a column-parallel input and a row-parallel
  // output gradient); NVFP4 likewise reduces its row-wise and column-wise
  // amaxes (8 bytes); MXFP8 and blockwise scales need no agreement.
  // `from_norm`: the tensor is a fused norm's output (see norm()), which
  // under delayed scaling is fp8 already and under current scaling comes
  // with its amax.
  void quantize_shard(std::vector<OpSpec>& ops, const std::string& name, double cols, bool from_norm) {
    if (q_.delayed && from_norm) return;
    if (q_.amax_bytes > 0 && !(from_norm && q_.norm_gives_amax))
      ops.push_back(memory_op(name + q(".", "amax"), q_.amax_bytes * Nsp_ * cols));
    if (q_.tp_amax_bytes > 0)
      ops.push_back(collective_op(name + q(".", "amax_allreduce"), CollectiveKind::AllReduce, CommGroup::TensorParallel,
                                  q_.tp_amax_bytes));
    ops.push_back(memory_op(name + q(".", "cast"), q_.shard_cast_bytes() * Nsp_ * cols));
  }

  // Selective recomputation (OpSpec::rerun_by, drops): the forward ops from
  // index `from` on run again when `modules` are recomputed.
  void rerun_from(std::size_t from, strategy::RecomputeModules modules) {
    for (std::size_t i = from; i < fw_.size(); ++i) fw_[i].rerun_by |= modules;
  }
  // Under `modules`, forward op `i` does not keep `bytes` of what it saves.
  void drop(std::size_t i, strategy::RecomputeModules modules, double bytes) {
    const std::uint64_t b = std::min(as_bytes(bytes), fw_[i].saved_bytes);
    if (b > 0) fw_[i].drops.push_back({modules, b});
  }
  // What the last forward op saves is the input of offload `modules`, a
  // tensor of `elements` elements (OpSpec::offload_modules).
  void offloads(std::uint8_t modules, double elements) {
    fw_.back().offload_modules = modules;
    fw_.back().offload_elements = elements;
  }
  // Under `modules`, forward op `i` holds `bytes` more until the backward
  // op that frees its saved tensors: the last of the latest backward group.
  void hold_until_backward(std::size_t i, strategy::RecomputeModules modules, double bytes) {
    PTSIM_ASSERT(!bw_groups_.empty() && !bw_groups_.back().empty(), "a backward group that frees what op i saves");
    const OpSpec::Drop hold{modules, as_bytes(bytes)};
    fw_[i].holds.push_back(hold);
    bw_groups_.back().back().holds.push_back(hold);
  }
  // Under `modules`, the forward ops from `from` on keep nothing they save.
  void drop_saved_from(std::size_t from, strategy::RecomputeModules modules) {
    for (std::size_t i = from; i < fw_.size(); ++i) drop(i, modules, static_cast<double>(fw_[i].saved_bytes));
  }
  // The index of the forward op `name` at or after `from`.
  std::size_t forward_index(const std::string& name, std::size_t from) const {
    for (std::size_t i = from; i < fw_.size(); ++i)
      if (fw_[i].name == name) return i;
    PTSIM_ASSERT(false, "an op the builder just added");
    return from;
  }

  // One group of backward ops, in issue order; OpSpec::after within it counts
  // from the group's first op (take() places the group).
  void backward(std::vector<OpSpec> ops) { bw_groups_.push_back(std::move(ops)); }
  // Tags the ops the builder adds from forward op `fw0` and backward group
  // `bw0` on with CUDA-graph region `region` (OpSpec::graph_region), those
  // `region_of` does not name otherwise (it returns 0 for them).
  template <class RegionOf>
  void tag_graph_regions(std::size_t fw0, std::size_t bw0, std::uint8_t region, RegionOf&& region_of) {
    const auto tag = [&](OpSpec& op) {
      const std::uint8_t named = region_of(op.name);
      op.graph_region = named ? named : region;
    };
    for (std::size_t i = fw0; i < fw_.size(); ++i) tag(fw_[i]);
    for (std::size_t g = bw0; g < bw_groups_.size(); ++g)
      for (OpSpec& op : bw_groups_[g]) tag(op);
  }
  // Eager kernels: the forward ops, and their backward as one group.
  void add(EagerOps ops) {
    for (OpSpec& op : ops.forward) fw_.push_back(std::move(op));
    backward(std::move(ops.backward));
  }

  void rope(double q_width, double k_width) {
    if (eager_) {
      add(eager_rope(N_ * q_width, N_ * k_width));
      return;
    }
    fw_.push_back(memory_op("attn.rope", 2 * 2 * N_ * (q_width + k_width)));
    backward({memory_op("attn.rope.bwd", 2 * 2 * N_ * (q_width + k_width))});
  }

  // DeepSeek's multi-head latent attention as Megatron-Core runs it since
  // July 2025 (multi_latent_attention.py, TE spec at 720c8b40d8 and after):
  // - the down projections are Transformer Engine Linears in 'duplicated'
  //   mode, weights whole on every TP rank, run on the rank's own tokens
  //   (its SP shard; every token without SP), no collective. Their weight
  //   gradients are summed over TP once a step (layer_tp_replicated_parameters);
  // - each up projection is a LayerNormColumnParallelLinear: the latent norm
  //   fused in, the latent gathered over TP under SP (fp8 under FP8), split
  //   over the heads, its input gradient reduce-scattered (all-reduced
  //   without SP);
  // - without a query low rank (q_lora_rank 0) the query projection is a
  //   ColumnParallelLinear of the gathered layer input;
  // - the rotary key part, [s/t, b, d_rope], is gathered from the SP region
  //   in bf16 (reduce-scattered in backward);
  // then decoupled RoPE and attention with head width d_nope + d_rope for
  // scores and d_v for values.
  void latent_attention_projections();

  // DeepSeek-V4's attention at this layer's ratio (layer_csa.cpp, after
  // csa.py and the dsv4_hybrid self-attention at TP 1): query low rank with
  // its norm and per-head normalization, one key/value head, RoPE on the
  // last qk_pos_emb_head_dim channels, the compressor and indexer by ratio,
  // the sparse attention kernel over the window and the chosen pooled keys,
  // and the grouped low-rank output projection.
  void compressed_attention();
  // A linear whose weight is whole on every rank (Megatron's "duplicated":
  // MLA's down projections, DeepSeek-V4's projections), `in` → `out` on the
  // rank's own tokens, in `dtype` (bf16 where Megatron-Core disables FP8 for
  // it); `saved`: bytes its weight gradient keeps; `input_grad`: whether its
  // input needs a gradient (the indexer's do not). layer_attention.cpp.
  void duplicated_linear(const std::string& name, double in, double out, double saved, Dtype dtype, bool input_grad);

  // Attention proper (after the projections, before the output projection),
  // then the output projection. q_d / v_d: query-key and value head widths;
  // kv_ratio: key/value heads over query heads.
  void core_attention(double qk_d, double v_d, double kv_ratio);

  void unfused_attention(double d, double v_d, double kv_ratio);

  // The fused kernel of one pass over `s` tokens: causal attention, or
  // under this layer's sliding window its band of scores (taskgraph::kSlidingWindow).
  OpSpec windowed_attention(const char* name, double bh, double s, double qk_d, double v_d, double kv_ratio,
                            bool backward_pass) const;

  // `saved`: what the ring's last forward op keeps; `kept`: of that, what
  // stays under core_attn recomputation (Q, K and V, the checkpoint's inputs).
  void ring_attention(double bh, double qk_d, double v_d, double kv_ratio, double saved, double kept);

  // The same under torchtitan's modules: PyTorch's context_parallel
  // (layer_torch_cp.cpp), keys and values rotated as
  // MicroShape::cp_rotate_method says, partial outputs merged in fp32.
  void torch_context_parallel_attention(double bh, double qk_d, double v_d, double kv_ratio, double saved, double kept);

  // A fused attention kernel of the run's backend (the profile's flash one
  // unless the run names another).
  OpSpec fused_attention(std::string name, double bh, double seq_q, double seq_kv, double qk_d, double v_d,
                         double kv_ratio, bool causal, bool backward_pass) const {
    OpSpec op = attention_op(std::move(name), bh, seq_q, seq_kv, qk_d, v_d, kv_ratio, causal, backward_pass);
    op.dtype = shape_.attention_dtype;
    switch (shape_.attention) {
      case strategy::AttentionBackend::Cudnn: op.flags |= taskgraph::kCudnn; break;
      case strategy::AttentionBackend::Flash2: op.flags |= taskgraph::kFlash2; break;
      case strategy::AttentionBackend::Triton: op.flags |= taskgraph::kTriton; break;
      case strategy::AttentionBackend::Flash:
      case strategy::AttentionBackend::Unfused: break;
    }
    return op;
  }

  static std::string fmt_step(const std::string& prefix, std::int64_t j) {
    return prefix + ".step" + std::to_string(j);
  }

  // The activation kernel's name: "<prefix>.swiglu", ".geglu", ".gelu" or
  // ".squared-relu". Every one is one elementwise kernel each way: reads the
  // FC1 output (both halves when gated) and writes the activation, keeping
  // its input; the backward reads the gradient and that input. Megatron-Core's
  // squared_relu, torch.pow(F.relu(x), 2), is one kernel under its jit_fuser
  // (megatron/core/activations.py at d98e8a64dd: torch.compile).
  std::string activation_name(const std::string& prefix) const {
    return prefix + "." + model::to_string(m_.activation);
  }

  void activation(const std::string& prefix, double rows, double fc1_out, double f) {
    if (eager_ && m_.activation == model::Activation::SwiGlu) {
      add(eager_swiglu(prefix, rows * f));
      return;
    }
    const std::string name = activation_name(prefix);
    fw_.push_back(saving(memory_op(name, 2 * rows * (fc1_out + f)), 2 * rows * fc1_out));
    backward({freeing(memory_op(name + ".bwd", 2 * rows * (2 * fc1_out + f)), 2 * rows * fc1_out)});
  }

  // `norm_fused`: the layer's MLP, whose FC1 takes the pre-MLP norm in (the
  // shared experts of an MoE layer follow a norm of their own).
  void dense_mlp(const std::string& prefix, double width, bool norm_fused) {
    const double gated = m_.gated_mlp() ? 2 : 1;
    // torchtitan's gate and up projections are two linears of one input: one
    // add of their input gradients after their backward (one kernel under
    // torch.compile too).
    if (modules_ && gated > 1) backward({memory_op(prefix + ".input_grad.add", 6 * N_ * h_)});
    enter_tp_region(prefix + ".input", true, norm_fused);
    if (modules_ && gated > 1) {
      // torchtitan's w1 (gate) and w3 (up), in the order its FeedForward runs them.
      column(prefix + ".w1", N_, h_, width, Nsp_ * h_, true, true, norm_fused, m_.add_bias_linear);
      column(prefix + ".w3", N_, h_, width, 0, false, false, norm_fused, m_.add_bias_linear);
    } else {
      column(prefix + ".fc1", N_, h_, gated * width, Nsp_ * h_, true, true, norm_fused, m_.add_bias_linear);
    }
    activation(prefix, N_, gated * width / t_, width / t_);
    row(prefix + ".fc2", N_, width, h_);
  }

  void moe();

  const bool sliding_;
  const std::int64_t layer_;  // the layer built (an MTP depth: the main layer it is built as)
  const model::ModelSpec& m_;
  const MicroShape& shape_;
  const double t_, N_, Nsp_, h_;
  const bool tp_, sp_, dropout_;
  bool fp8_;  // the linears being built are quantized (in_format may change it for a module)
  // modules_: torchtitan's PyTorch modules (separate linears, repeat_kv);
  // eager_: their memory-bound ops one ATen kernel each, as outside
  // torch.compile (under it, Inductor's one kernel a chain: the fused ops).
  const bool modules_, eager_;
  // torchao's Float8 in those modules (compiled only: resolve_run refuses it eager).
  const bool torchao_;
  strategy::Quantization q_;  // the recipe's quantization bytes (or a module's, in in_format)
  Dtype gemm_dtype_;          // the format the linears being built multiply in
  std::vector<OpSpec> fw_;
  std::vector<std::vector<OpSpec>> bw_groups_;
  std::size_t pre_mlp_norm_ = 0;  // index of the pre-MLP norm in fw_
  bool aggregate_feeds_norm_ = false;  // the next norm reads a hyper-connection's aggregate
};

}  // namespace ptsim::workload::internal

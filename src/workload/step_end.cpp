// The end of a stage's step (see internal/step_end.hpp).
#include "internal/step_end.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "internal/muon_step.hpp"
#include "ptsim/strategy/quantization.hpp"
#include "ptsim/workload/boundary_ops.hpp"
#include "ptsim/workload/layer_ops.hpp"
#include "ptsim/workload/op_spec.hpp"
#include "ptsim/workload/stage_parameters.hpp"
#include "ptsim/workload/step_workload.hpp"

namespace ptsim::workload::internal {

namespace {

using taskgraph::CollectiveKind;

// Gradients of parameters every TP rank holds whole but trains apart, summed
// over TP at the step's end.
std::int64_t tp_replicated_parameters(const StageContext& ctx, bool holds_last_virtual) {
  const strategy::ParallelConfig& c = *ctx.config;
  const model::ModelSpec& m = *ctx.model;
  std::int64_t n = 0;
  for (const auto& chunk : ctx.chunks)
    for (std::int64_t layer = chunk.first; layer < chunk.first + chunk.count; ++layer)
      n += layer_tp_replicated_parameters(m, c, layer);
  if (holds_last_virtual) n += output_tp_replicated_parameters(m, c);
  return n;
}

// The fp8 weight tensors of this stage's layers, each with a scale of its
// own: the linears of attention and of a dense MLP or the shared experts
// and a latent MoE's projections (dense parameters), and one fc1 and one fc2
// weight per local expert
// (Megatron-Core's TEGroupedMLP keeps each expert's weights apart).
struct Fp8WeightTensors {
  std::int64_t dense = 0, expert = 0;
};
Fp8WeightTensors fp8_weight_tensors(const StageContext& ctx) {
  const strategy::ParallelConfig& c = *ctx.config;
  const model::ModelSpec& m = *ctx.model;
  Fp8WeightTensors t;
  for (const auto& chunk : ctx.chunks)
    for (std::int64_t layer = chunk.first; layer < chunk.first + chunk.count; ++layer) {
      if (c.bf16_layer(layer, m.num_layers)) continue;  // its weights stay bf16
      const std::int64_t gemms = fp8_gemms_per_layer(m, layer, c.torch_modules());
      if (!m.is_moe_layer(layer)) {
        t.dense += gemms;
        continue;
      }
      t.dense += gemms - 2;  // all but the routed experts' fc1 and fc2
      t.expert += 2 * m.num_moe_experts / c.ep;
    }
  return t;
}

// ZeRO-1/2, and Muon's layer-wise distributed optimizer: every rank gathers
// the parameters the others updated, after the optimizer, unless the next
// step's forward overlaps it. `quantized_gather`: the layers' parameters in
// a buffer of their own, gathered at q.param_gather_bytes each.
void gather_updated_parameters(const StageContext& ctx, ProgramBuilder& out, DataParallel& dp, bool quantized_gather) {
  const strategy::ParallelConfig& c = *ctx.config;
  dp.persistent_gather();  // DeepSpeed 0.3's ZeRO-3 only
  const strategy::Quantization q = strategy::quantization_of(c);
  const bool sharded = c.zero_stage == 1 || c.zero_stage == 2 || c.muon_layer_wise;
  if (sharded && !c.overlap_param_gather) {
    const auto gather = [&](std::int64_t total, std::uint8_t slot, double bytes_per_parameter) {
      if (dp.group_of(slot) == 1) return;
      for (std::int64_t left = total; left > 0;) {
        const std::int64_t n = std::min(left, ctx.ddp_bucket_parameters);
        out.instantiate(dp.collective("zero.param_allgather.bucket", slot, CollectiveKind::AllGather,
                                      static_cast<std::uint64_t>(bytes_per_parameter * static_cast<double>(n)), false),
                        -1, -1);
        left -= n;
      }
    };
    // Under fp8 parameter gathering the layers' parameters sit in a buffer
    // of their own, gathered at one byte each; the embedding and output
    // layer stay bf16 (Megatron's buffers are per dtype).
    // (Layers first_last_layers_bf16 keeps in bf16 too.)
    const RankParameters quantized = quantized_gather ? ctx.quantized_layer_parameters : RankParameters{};
    gather(quantized.dense, slots::kDataParallel, q.param_gather_bytes);
    gather(ctx.stage_parameters.dense - quantized.dense, slots::kDataParallel, 2.0);
    gather(quantized.expert, slots::kExpertDataParallel, q.param_gather_bytes);
    gather(ctx.stage_parameters.expert - quantized.expert, slots::kExpertDataParallel, 2.0);
  }
}

}  // namespace

void emit_step_end_ops(ProgramBuilder& out, const std::string& key, const std::vector<OpSpec>& ops) {
  out.instantiate(out.block(key,
                            [&](BlockRecorder& b) {
                              b.begin_list();
                              const auto names = b.names_of(ops, "");
                              for (std::size_t i = 0; i < ops.size(); ++i)
                                b.emit(ops[i], names[i], categories::kOptimizer, 0, 0);
                            }),
                  -1, -1);
}

void build_step_end(const StageContext& ctx, ProgramBuilder& out, DataParallel& dp, bool holds_first_virtual,
                    bool holds_last_virtual) {
  const strategy::ParallelConfig& c = *ctx.config;
  const model::ModelSpec& m = *ctx.model;
  dp.reduce_remaining();
  // Tied input and output embeddings on different stages: once the DP
  // reduction is done, their gradients are summed over the embedding group
  // (Megatron-LM's finalize_model_grads), before the optimizer runs.
  if (ctx.embedding_group && (holds_first_virtual || holds_last_virtual)) {
    const auto bytes = static_cast<std::uint64_t>(c.gradient_bytes() * (m.vocab_size / c.tp) * m.hidden_size);
    out.instantiate(out.block("embedding.grad_allreduce",
                              [&](BlockRecorder& b) {
                                const auto id = b.emit_collective(streams::kEmbeddingGrad, slots::kEmbedding,
                                                                  categories::kPipelineParallel, bytes,
                                                                  "embedding.grad_allreduce", false);
                                b.follow_stream(id, streams::kDataParallel);
                              }),
                    -1, -1);
  }
  // The optimizer waits for every gradient reduction; each stream runs its
  // reductions in order, so waiting for each stream's last task is enough.
  out.wait_for_stream(streams::kDataParallel);
  out.wait_for_stream(streams::kEmbeddingGrad);
  // Gradients of parameters every TP rank holds whole but trains apart
  // (layer_tp_replicated_parameters, output_tp_replicated_parameters),
  // summed over TP after the DP reduction: flattened into one buffer,
  // all-reduced, copied back (Megatron-Core's
  // _allreduce_non_tensor_model_parallel_grads).
  if (const std::int64_t n = tp_replicated_parameters(ctx, holds_last_virtual); n > 0) {
    const double bytes = static_cast<double>(c.gradient_bytes()) * static_cast<double>(n);
    emit_step_end_ops(out, fmt::format("tp_replicated_grads.{}", n),
                      {memory_op("tp_replicated_grads.flatten", 2 * bytes),
                       collective_op("tp_replicated_grads.allreduce", CollectiveKind::AllReduce,
                                     CommGroup::TensorParallel, bytes),
                       memory_op("tp_replicated_grads.unflatten", 2 * bytes)});
  }
  // A full-iteration CUDA graph ends here, with finalize_model_grads: the
  // optimizer step runs eagerly (full_cuda_graph.py at d98e8a64dd wraps
  // forward_backward_func only).
  out.set_full_graph(false);
  const auto shard = [&](std::int64_t n, std::int64_t group) {
    return c.zero_stage >= 1 ? (n + group - 1) / group : n;
  };
  // Hybrid-FSDP: each instance's shard split again across the instances.
  const std::int64_t outer = c.outer_optimizer_sharding ? c.optimizer_instances : 1;
  const std::int64_t updated = shard(ctx.stage_parameters.dense, ctx.dense_group * outer) +
                               shard(ctx.stage_parameters.expert, ctx.expert_group * outer);
  // With fp8 parameter gathering the Adam kernel leaves the model
  // parameters alone and the updated shard is cast to fp8 after it (read
  // the fp32 main parameters, write one byte). Every DP rank casts its own
  // shard of a weight, and the shards must share one scale, so the shard
  // amaxes are all-reduced (max) over the parameters' DP group, one fp32
  // per weight tensor, packed into one call (Transformer Engine
  // tensor/utils.py at d0067d0da6, _cast_master_weights_to_fp8_*). Under
  // current scaling that scale is this step's: each shard's amax is read
  // first (read 4 bytes a parameter) and the cast waits for the reduction;
  // under delayed scaling the cast uses the scale it has and the reduced
  // amaxes update the scales after it. Blockwise scaling does as current
  // scaling with one amax per 128×128 weight block
  // (_cast_master_weights_to_fp8_blockwise_scaling), NVFP4 with one per
  // 16×16 block and writes half a byte a parameter
  // (_cast_master_weights_to_nvfp4_2d). MXFP8's gather moves bf16
  // (strategy::Quantization): the optimizer writes it as without fp8.
  const strategy::Quantization q = strategy::quantization_of(c);
  const bool quantized_gather = c.fp8_param_gather && q.param_gather_quantized();
  // FSDP's Adam updates the fp32 shards, the parameters themselves: it
  // reads fp32 gradients and writes no bf16 copy. PyTorch's foreach AdamW
  // (torch/optim/adamw.py _multi_tensor_adamw, foreach=True, as torchtitan
  // builds it: torchtitan/optimizer.py at 9dec370) makes eight passes over
  // the shard, bytes read + written a parameter: weight decay's _foreach_mul_
  // 4 + 4, the first moment's _foreach_lerp_ 8 + 4, the second's
  // _foreach_mul_ 4 + 4 and _foreach_addcmul_ 12 + 4, _foreach_sqrt 4 + 4,
  // _foreach_div_ 4 + 4, _foreach_add_ (eps) 4 + 4, _foreach_addcdiv_ 12 + 4:
  // 84, where the fused kernel moves 28. Before it torchtitan clips the
  // gradients (train.py, utils.clip_grad_norm_ with foreach=True): the
  // shard's norm (_foreach_norm, 4), its all-reduce over the shard group
  // (the DTensor's full_tensor), and the scale by the clip coefficient,
  // applied whatever its value (_foreach_mul_, 4 + 4).
  if (c.optimizer == strategy::Optimizer::Muon) {
    // AdamW takes what Muon does not: of the rank's parameters (its share
    // under the layer-wise optimizer), all but the weights.
    const RankParameters weights = weight_elements(ctx.weight_matrices);
    const auto rest = [&](std::int64_t all, std::int64_t muon, std::int64_t group) {
      return c.muon_layer_wise ? (all - muon + group - 1) / group : all - muon;
    };
    build_muon_step(ctx, out,
                    rest(ctx.stage_parameters.dense, weights.dense, ctx.dense_group) +
                        rest(ctx.stage_parameters.expert, weights.expert, ctx.expert_group));
    gather_updated_parameters(ctx, out, dp, false);
    return;
  }
  const double shard_parameters = static_cast<double>(updated);
  // Megatron-FSDP's MXFP8 parameters: Adam leaves the compute weights alone
  // and the updated fp32 shard is cast into both MXFP8 copies (read 4 bytes,
  // write each copy with its scales); block scales need no amax reduction.
  if (c.megatron_fsdp && c.zero_stage >= 3 && c.fp8_param_gather && c.fp8_recipe == strategy::Fp8Recipe::Mxfp8) {
    const strategy::Quantization mx = strategy::quantization_of(c);
    emit_step_end_ops(out, fmt::format("optimizer.{}.mxfp8_fsdp", updated),
                      {optimizer_step_op(updated, c.gradient_bytes(), 0),
                       memory_op("fp8.param_shard_cast", (4 + 2 * mx.copy_bytes) * shard_parameters,
                                 taskgraph::KernelClass::Optimizer)});
    return;
  }
  if (c.foreach_optimizer) {
    emit_step_end_ops(out, fmt::format("optimizer.grad_norm.{}", updated),
                      {memory_op("optimizer.grad_norm", 4 * shard_parameters, taskgraph::KernelClass::Optimizer)});
    if (dp.group_of(slots::kDataParallel) > 1)
      out.instantiate(dp.collective("optimizer.grad_norm_allreduce", slots::kDataParallel, CollectiveKind::AllReduce, 4,
                                    true),
                      -1, -1);
    emit_step_end_ops(out, fmt::format("optimizer.grad_clip.{}", updated),
                      {memory_op("optimizer.grad_clip", 8 * shard_parameters, taskgraph::KernelClass::Optimizer)});
  }
  const OpSpec step =
      c.foreach_optimizer
          ? memory_op("optimizer.adamw_foreach", 84 * shard_parameters, taskgraph::KernelClass::Optimizer)
      : c.fsdp() ? optimizer_step_op(updated, 4, 0)
                 : optimizer_step_op(updated, c.gradient_bytes(), quantized_gather ? 0 : 2, c.adam_state_bytes());
  // Under quantized gathering the shards of layers first_last_layers_bf16
  // keeps in bf16 (and of MTP depths outside the run's format) are copied to
  // their bf16 parameters after the step (read 4, write 2 bytes each), the
  // others cast.
  std::int64_t kept_bf16 = 0;
  if (quantized_gather) {
    RankParameters layers = stage_layer_parameters(m, c, ctx.stage);
    if (holds_last_virtual) layers += mtp_parameters_per_rank(m, c, false);
    kept_bf16 = shard(layers.dense - ctx.quantized_layer_parameters.dense, ctx.dense_group * outer) +
                shard(layers.expert - ctx.quantized_layer_parameters.expert, ctx.expert_group * outer);
  }
  if (!quantized_gather) {
    emit_step_end_ops(out, fmt::format("optimizer.{}{}", updated, c.foreach_optimizer ? ".foreach" : ""), {step});
  } else {
    const std::string tag(q.tag);
    const OpSpec cast =
        memory_op(tag + ".param_shard_cast", (4 + q.param_gather_bytes) * static_cast<double>(updated - kept_bf16),
                  taskgraph::KernelClass::Optimizer);
    const auto reduce_amaxes = [&] {
      const Fp8WeightTensors t = fp8_weight_tensors(ctx);
      const auto reduce = [&](std::int64_t tensors, std::uint8_t slot) {
        if (tensors == 0 || dp.group_of(slot) == 1) return;
        out.instantiate(dp.collective(tag + ".param_amax_allreduce", slot, CollectiveKind::AllReduce,
                                      static_cast<std::uint64_t>(4 * tensors), true),
                        -1, -1);
      };
      if (q.param_amax_block == 0) {
        reduce(t.dense, slots::kDataParallel);
        reduce(t.expert, slots::kExpertDataParallel);
        return;
      }
      // One fp32 amax per block of the stage's layer weights.
      const auto blocks = [&](std::int64_t n) {
        return static_cast<std::int64_t>(std::ceil(static_cast<double>(n) / q.param_amax_block));
      };
      reduce(blocks(ctx.quantized_layer_parameters.dense), slots::kDataParallel);
      reduce(blocks(ctx.quantized_layer_parameters.expert), slots::kExpertDataParallel);
    };
    if (c.fsdp()) {
      // torchao's precompute_float8_dynamic_scale_for_fsdp (torchtitan calls
      // it after the optimizer): the amax of every fp32 weight shard in one
      // foreach kernel (read 4 bytes a parameter) and one all-reduce of the
      // amaxes; each shard is cast as FSDP2 gathers it, in its copy-in
      // (fsdp_pre_all_gather), beside the compute stream as FSDP2's bf16
      // copy-in (not modelled either).
      const double weights = static_cast<double>(shard(ctx.quantized_layer_parameters.dense, ctx.dense_group));
      emit_step_end_ops(out, fmt::format("optimizer.{}.{}_shard_amax", updated, tag),
                        {step, memory_op(tag + ".param_shard_amax", 4 * weights, taskgraph::KernelClass::Optimizer)});
      reduce_amaxes();
    } else if (!q.delayed) {
      emit_step_end_ops(out, fmt::format("optimizer.{}.{}_amax", updated, tag),
                        {step, memory_op(tag + ".param_shard_amax", 4.0 * static_cast<double>(updated),
                                         taskgraph::KernelClass::Optimizer)});
      reduce_amaxes();
      emit_step_end_ops(out, fmt::format("optimizer.{}.{}_cast", updated, tag), {cast});
    } else {
      emit_step_end_ops(out, fmt::format("optimizer.{}.fp8", updated), {step, cast});
      reduce_amaxes();
    }
  }
  if (kept_bf16 > 0)
    emit_step_end_ops(out, fmt::format("optimizer.bf16_param_copy.{}", kept_bf16),
                      {memory_op("optimizer.bf16_param_copy", 6 * static_cast<double>(kept_bf16),
                                 taskgraph::KernelClass::Optimizer)});
  gather_updated_parameters(ctx, out, dp, quantized_gather);
}

}  // namespace ptsim::workload::internal

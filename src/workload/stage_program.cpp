// One pipeline stage's program (see internal/stage_program.hpp): for each
// step of the schedule, receive the input, run the blocks, send the output;
// in the last backward step, reduce gradient buckets over data parallelism
// as they become final; then the embedding all-reduce and the optimizer.
#include "internal/stage_program.hpp"

#include <fmt/format.h>

#include "internal/program_emitter.hpp"
#include "ptsim/strategy/pipeline_schedule.hpp"
#include "ptsim/workload/boundary_ops.hpp"
#include "ptsim/workload/layer_ops.hpp"
#include "ptsim/workload/stage_parameters.hpp"
#include "ptsim/workload/step_workload.hpp"

namespace ptsim::workload::internal {

namespace {

using strategy::Pass;
using Where = ProgramEmitter::Where;

class StageBuilder {
 public:
  StageBuilder(const StageContext& ctx, NameTable& names, taskgraph::TaskGraph& program)
      : ctx_(ctx), out_(names, program), shape_{ctx.micro_batch_size, ctx.model->seq_length,
                                       ctx.config->tp} {
    layer_ = named(transformer_layer_ops(*ctx.model, shape_));
    embedding_ = named(embedding_ops(*ctx.model, shape_));
    output_ = named(output_ops(*ctx.model, shape_));
    activation_bytes_ = static_cast<std::uint64_t>(2 * ctx.micro_batch_size *
                                                   ctx.model->seq_length * ctx.model->hidden_size);
  }

  void build() {
    const auto order = strategy::make_pipeline_order(ctx_.config->schedule, ctx_.stage,
                                                     ctx_.num_stages, ctx_.num_microbatches);
    std::size_t last_backward = 0;
    for (std::size_t i = 0; i < order.size(); ++i)
      if (order[i].pass == Pass::Backward) last_backward = i;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const auto mb = static_cast<std::int32_t>(order[i].microbatch);
      if (order[i].pass == Pass::Forward) {
        forward(mb);
      } else {
        backward(mb, i == last_backward);
      }
    }
    finish_step();
  }

 private:
  // A block's ops with their task names interned once: forward ("fwd."),
  // recomputed ("recompute.") and backward ("bwd.").
  struct NamedBlock {
    BlockOps ops;
    std::vector<std::uint32_t> forward, recompute, backward;
  };

  NamedBlock named(BlockOps ops) {
    NamedBlock b;
    b.forward = out_.names_of(ops.forward, "fwd.");
    b.recompute = out_.names_of(ops.forward, "recompute.");
    b.backward = out_.names_of(ops.backward, "bwd.");
    b.ops = std::move(ops);
    return b;
  }

  bool first_stage() const { return ctx_.stage == 0; }
  bool last_stage() const { return ctx_.stage == ctx_.num_stages - 1; }
  bool full_recompute() const { return ctx_.config->recompute == strategy::RecomputeKind::Full; }

  void forward(std::int32_t mb) {
    if (!first_stage())
      out_.emit_recv(streams::kPipelineRecvForward, slots::kPipelineForwardRecv, activation_bytes_,
                     "pp.recv_activation", {mb, -1});
    if (first_stage()) emit_block_forward(embedding_, {mb, -1}, false);
    for (std::int64_t l = 0; l < ctx_.layers.count; ++l) {
      const Where where{mb, static_cast<std::int32_t>(ctx_.layers.first + l)};
      emit_block_forward(layer_, where, full_recompute());
    }
    if (last_stage()) {
      emit_block_forward(output_, {mb, -1}, false);
    } else {
      out_.emit_send(streams::kPipelineSendForward, slots::kPipelineForwardSend, activation_bytes_,
                     "pp.send_activation", {mb, -1});
    }
  }

  void backward(std::int32_t mb, bool final_step) {
    if (!last_stage())
      out_.emit_recv(streams::kPipelineRecvBackward, slots::kPipelineBackwardRecv,
                     activation_bytes_, "pp.recv_gradient", {mb, -1});
    if (last_stage()) {
      emit_block_backward(output_, {mb, -1});
      if (final_step)
        gradients_ready(output_parameters_per_rank(*ctx_.model, ctx_.config->tp, ctx_.num_stages));
    }
    for (std::int64_t l = ctx_.layers.count - 1; l >= 0; --l) {
      const Where where{mb, static_cast<std::int32_t>(ctx_.layers.first + l)};
      if (full_recompute()) emit_recompute(where);
      emit_block_backward(layer_, where);
      if (final_step) gradients_ready(layer_parameters_per_rank(*ctx_.model, ctx_.config->tp));
    }
    if (!first_stage()) {
      out_.emit_send(streams::kPipelineSendBackward, slots::kPipelineBackwardSend,
                     activation_bytes_, "pp.send_gradient", {mb, -1});
    } else {
      emit_block_backward(embedding_, {mb, -1});
      if (final_step) gradients_ready(embedding_parameters_per_rank(*ctx_.model, ctx_.config->tp));
    }
    if (final_step) flush_bucket();
  }

  // Forward ops; under full recomputation only the layer input (what the
  // first op saves) stays allocated, the rest is rebuilt in the backward pass.
  void emit_block_forward(const NamedBlock& block, Where where, bool checkpoint_only) {
    const auto& ops = block.ops.forward;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const std::uint64_t alloc = checkpoint_only && i > 0 ? 0 : ops[i].saved_bytes;
      out_.emit(ops[i], block.forward[i], categories::kForward, where, alloc, 0);
    }
  }

  // The recomputed forward of one layer: everything but the checkpointed
  // input is allocated again.
  void emit_recompute(Where where) {
    const auto& ops = layer_.ops.forward;
    for (std::size_t i = 0; i < ops.size(); ++i)
      out_.emit(ops[i], layer_.recompute[i], categories::kRecompute, where,
                i == 0 ? 0 : ops[i].saved_bytes, 0);
  }

  void emit_block_backward(const NamedBlock& block, Where where) {
    const auto& ops = block.ops.backward;
    for (std::size_t i = 0; i < ops.size(); ++i)
      out_.emit(ops[i], block.backward[i], categories::kBackward, where, 0, ops[i].freed_bytes);
  }

  // Megatron-LM's DDP: gradients become final in the last micro-batch's
  // backward; a bucket is all-reduced over DP as soon as it is full.
  void gradients_ready(std::int64_t parameters) {
    if (ctx_.config->dp == 1) return;
    bucket_parameters_ += parameters;
    if (bucket_parameters_ >= ctx_.ddp_bucket_parameters) flush_bucket();
  }

  void flush_bucket() {
    if (bucket_parameters_ == 0) return;
    const auto bytes = static_cast<std::uint64_t>(2 * bucket_parameters_);  // bf16 gradients
    out_.emit_collective(streams::kDataParallel, slots::kDataParallel, categories::kDataParallel,
                         bytes, fmt::format("dp.grad_allreduce.bucket{}", buckets_++), false);
    bucket_parameters_ = 0;
  }

  void finish_step() {
    // Tied input and output embeddings on different stages: once the DP
    // reduction is done, their gradients are summed over the embedding group
    // (Megatron-LM's finalize_model_grads), before the optimizer runs.
    if (ctx_.embedding_group && (first_stage() || last_stage())) {
      const auto bytes = static_cast<std::uint64_t>(
          2 * (ctx_.model->vocab_size / ctx_.config->tp) * ctx_.model->hidden_size);
      const auto id =
          out_.emit_collective(streams::kEmbeddingGrad, slots::kEmbedding,
                               categories::kPipelineParallel, bytes, "embedding.grad_allreduce", false);
      out_.follow_stream(id, streams::kDataParallel);
    }
    // The optimizer waits for every gradient reduction; each stream runs its
    // reductions in order, so waiting for each stream's last task is enough.
    out_.wait_for_stream(streams::kDataParallel);
    out_.wait_for_stream(streams::kEmbeddingGrad);
    const OpSpec step = optimizer_step_op(ctx_.stage_parameters);
    out_.emit(step, out_.names_of({step}, "")[0], categories::kOptimizer, {-1, -1}, 0, 0);
  }

  const StageContext& ctx_;
  ProgramEmitter out_;
  MicroShape shape_;
  NamedBlock layer_, embedding_, output_;
  std::uint64_t activation_bytes_ = 0;
  std::int64_t bucket_parameters_ = 0;
  int buckets_ = 0;
};

}  // namespace

void build_stage_program(const StageContext& ctx, NameTable& names, taskgraph::TaskGraph& program) {
  StageBuilder(ctx, names, program).build();
}

}  // namespace ptsim::workload::internal

// One pipeline stage's program (see internal/stage_program.hpp): for each
// step of the schedule, receive the input, run the blocks, send the output;
// in the last backward step, reduce gradient buckets over data parallelism
// as they become final; then the embedding all-reduce and the optimizer.
// Each kind of block (a layer's forward, its backward, a receive, …) is
// recorded once and instantiated per micro-batch and layer.
#include "internal/stage_program.hpp"

#include <fmt/format.h>

#include "internal/program_builder.hpp"
#include "ptsim/strategy/pipeline_schedule.hpp"
#include "ptsim/workload/boundary_ops.hpp"
#include "ptsim/workload/layer_ops.hpp"
#include "ptsim/workload/stage_parameters.hpp"
#include "ptsim/workload/step_workload.hpp"

namespace ptsim::workload::internal {

namespace {

using strategy::Pass;

class StageBuilder {
 public:
  StageBuilder(const StageContext& ctx, NameTable& names, taskgraph::Program& program)
      : ctx_(ctx),
        out_(names, program),
        shape_{ctx.micro_batch_size, ctx.model->seq_length, ctx.config->tp,
               ctx.config->attention == strategy::AttentionBackend::Flash, ctx.config->precision} {
    layer_ = transformer_layer_ops(*ctx.model, shape_);
    embedding_ = embedding_ops(*ctx.model, shape_);
    output_ = output_ops(*ctx.model, shape_);
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
  bool first_stage() const { return ctx_.stage == 0; }
  bool last_stage() const { return ctx_.stage == ctx_.num_stages - 1; }
  bool full_recompute() const { return ctx_.config->recompute == strategy::RecomputeKind::Full; }
  std::int32_t layer_index(std::int64_t l) const {
    return static_cast<std::int32_t>(ctx_.layers.first + l);
  }

  // Forward ops; under full recomputation only the layer input (what the
  // first op saves) stays allocated, the rest is rebuilt in the backward pass.
  std::uint32_t forward_block(const std::string& key, const std::vector<OpSpec>& ops,
                              bool checkpoint_only) {
    return out_.block(key, [&](BlockRecorder& b) {
      const auto names = b.names_of(ops, "fwd.");
      for (std::size_t i = 0; i < ops.size(); ++i)
        b.emit(ops[i], names[i], categories::kForward,
               checkpoint_only && i > 0 ? 0 : ops[i].saved_bytes, 0);
    });
  }

  std::uint32_t backward_block(const std::string& key, const std::vector<OpSpec>& ops) {
    return out_.block(key, [&](BlockRecorder& b) {
      const auto names = b.names_of(ops, "bwd.");
      for (std::size_t i = 0; i < ops.size(); ++i)
        b.emit(ops[i], names[i], categories::kBackward, 0, ops[i].freed_bytes);
    });
  }

  // The recomputed forward of one layer: everything but the checkpointed
  // input is allocated again.
  std::uint32_t recompute_block() {
    return out_.block("layer.recompute", [&](BlockRecorder& b) {
      const auto& ops = layer_.forward;
      const auto names = b.names_of(ops, "recompute.");
      for (std::size_t i = 0; i < ops.size(); ++i)
        b.emit(ops[i], names[i], categories::kRecompute, i == 0 ? 0 : ops[i].saved_bytes, 0);
    });
  }

  std::uint32_t transfer_block(const std::string& name, bool send, std::uint8_t stream,
                               std::uint8_t slot) {
    return out_.block(name, [&](BlockRecorder& b) {
      if (send) {
        b.emit_send(stream, slot, activation_bytes_, name);
      } else {
        b.emit_recv(stream, slot, activation_bytes_, name);
      }
    });
  }

  void forward(std::int32_t mb) {
    if (!first_stage())
      out_.instantiate(transfer_block("pp.recv_activation", false, streams::kPipelineRecvForward,
                                      slots::kPipelineForwardRecv),
                       mb, -1);
    if (first_stage())
      out_.instantiate(forward_block("embedding.fwd", embedding_.forward, false), mb, -1);
    const std::uint32_t layer = full_recompute() ? forward_block("layer.fwd.checkpoint", layer_.forward, true)
                                                 : forward_block("layer.fwd", layer_.forward, false);
    for (std::int64_t l = 0; l < ctx_.layers.count; ++l) out_.instantiate(layer, mb, layer_index(l));
    if (last_stage()) {
      out_.instantiate(forward_block("output.fwd", output_.forward, false), mb, -1);
    } else {
      out_.instantiate(transfer_block("pp.send_activation", true, streams::kPipelineSendForward,
                                      slots::kPipelineForwardSend),
                       mb, -1);
    }
  }

  void backward(std::int32_t mb, bool final_step) {
    if (!last_stage())
      out_.instantiate(transfer_block("pp.recv_gradient", false, streams::kPipelineRecvBackward,
                                      slots::kPipelineBackwardRecv),
                       mb, -1);
    if (last_stage()) {
      out_.instantiate(backward_block("output.bwd", output_.backward), mb, -1);
      if (final_step)
        gradients_ready(output_parameters_per_rank(*ctx_.model, ctx_.config->tp, ctx_.num_stages));
    }
    const std::uint32_t layer = backward_block("layer.bwd", layer_.backward);
    for (std::int64_t l = ctx_.layers.count - 1; l >= 0; --l) {
      if (full_recompute()) out_.instantiate(recompute_block(), mb, layer_index(l));
      out_.instantiate(layer, mb, layer_index(l));
      if (final_step) gradients_ready(layer_parameters_per_rank(*ctx_.model, ctx_.config->tp));
    }
    if (!first_stage()) {
      out_.instantiate(transfer_block("pp.send_gradient", true, streams::kPipelineSendBackward,
                                      slots::kPipelineBackwardSend),
                       mb, -1);
    } else {
      out_.instantiate(backward_block("embedding.bwd", embedding_.backward), mb, -1);
      if (final_step) gradients_ready(embedding_parameters_per_rank(*ctx_.model, ctx_.config->tp));
    }
    if (final_step) flush_bucket();
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
    const std::string name = fmt::format("dp.grad_allreduce.bucket{}", buckets_++);
    out_.instantiate(out_.block(name, [&](BlockRecorder& b) {
                       b.emit_collective(streams::kDataParallel, slots::kDataParallel,
                                         categories::kDataParallel, bytes, name, false);
                     }),
                     -1, -1);
    bucket_parameters_ = 0;
  }

  void finish_step() {
    // Tied input and output embeddings on different stages: once the DP
    // reduction is done, their gradients are summed over the embedding group
    // (Megatron-LM's finalize_model_grads), before the optimizer runs.
    if (ctx_.embedding_group && (first_stage() || last_stage())) {
      const auto bytes = static_cast<std::uint64_t>(
          2 * (ctx_.model->vocab_size / ctx_.config->tp) * ctx_.model->hidden_size);
      out_.instantiate(out_.block("embedding.grad_allreduce",
                                  [&](BlockRecorder& b) {
                                    const auto id = b.emit_collective(
                                        streams::kEmbeddingGrad, slots::kEmbedding,
                                        categories::kPipelineParallel, bytes,
                                        "embedding.grad_allreduce", false);
                                    b.follow_stream(id, streams::kDataParallel);
                                  }),
                       -1, -1);
    }
    // The optimizer waits for every gradient reduction; each stream runs its
    // reductions in order, so waiting for each stream's last task is enough.
    out_.wait_for_stream(streams::kDataParallel);
    out_.wait_for_stream(streams::kEmbeddingGrad);
    const OpSpec step = optimizer_step_op(ctx_.stage_parameters);
    out_.instantiate(out_.block("optimizer",
                                [&](BlockRecorder& b) {
                                  b.emit(step, b.names_of({step}, "")[0], categories::kOptimizer, 0, 0);
                                }),
                     -1, -1);
  }

  const StageContext& ctx_;
  ProgramBuilder out_;
  MicroShape shape_;
  BlockOps layer_, embedding_, output_;
  std::uint64_t activation_bytes_ = 0;
  std::int64_t bucket_parameters_ = 0;
  int buckets_ = 0;
};

}  // namespace

void build_stage_program(const StageContext& ctx, NameTable& names, taskgraph::Program& program) {
  StageBuilder(ctx, names, program).build();
}

}  // namespace ptsim::workload::internal

// One pipeline stage's program (see internal/stage_program.hpp): for each
// step of the schedule, receive the input, run the blocks of the step's model
// chunk, send the output; reduce gradients over data parallelism (ZeRO: shard
// them) as they become final or after the last backward; then the embedding
// all-reduce, the optimizer and the parameter all-gather of sharded
// optimizers. Each kind of block (a layer's forward, its backward, a
// receive, …) is recorded once and instantiated per micro-batch and layer.
#include "internal/stage_program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "internal/data_parallel.hpp"
#include "internal/layer_blocks.hpp"
#include "internal/p2p_calls.hpp"
#include "internal/program_builder.hpp"
#include "internal/step_end.hpp"
#include "ptsim/strategy/schedule.hpp"
#include "ptsim/strategy/pipeline_schedule.hpp"
#include "ptsim/strategy/quantization.hpp"
#include "ptsim/workload/boundary_ops.hpp"
#include "ptsim/workload/layer_ops.hpp"
#include "ptsim/workload/step_workload.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::workload::internal {

namespace {

using strategy::Pass;
using strategy::ScheduleKind;
using taskgraph::CollectiveKind;
using taskgraph::TaskRef;

// One pipeline direction's channels (DualPipe's chunk 1 runs the other way).
struct Channels {
  std::uint8_t send_forward_stream, recv_forward_stream, send_backward_stream, recv_backward_stream;
  std::uint8_t send_forward_slot, recv_forward_slot, send_backward_slot, recv_backward_slot;
  const char* suffix;
};

constexpr Channels kDirection0{streams::kPipelineSendForward,  streams::kPipelineRecvForward,
                               streams::kPipelineSendBackward, streams::kPipelineRecvBackward,
                               slots::kPipelineForwardSend,    slots::kPipelineForwardRecv,
                               slots::kPipelineBackwardSend,   slots::kPipelineBackwardRecv,
                               ""};
constexpr Channels kDirection1{streams::kPipeline1SendForward,  streams::kPipeline1RecvForward,
                               streams::kPipeline1SendBackward, streams::kPipeline1RecvBackward,
                               slots::kPipeline1ForwardSend,    slots::kPipeline1ForwardRecv,
                               slots::kPipeline1BackwardSend,   slots::kPipeline1BackwardRecv,
                               ".dir1"};

class StageBuilder {
 public:
  StageBuilder(const StageContext& ctx, NameTable& names, taskgraph::Program& program)
      : ctx_(ctx),
        c_(*ctx.config),
        m_(*ctx.model),
        out_(names, program),
        shape_(micro_shape(m_, c_)),
        dp_(ctx, out_),
        blocks_(m_, c_, shape_, out_, [this](std::int64_t layer) {
          std::uint64_t held = 0;
          if (zero3())
            dp_.for_each_zero3_gathered(layer, [&](std::int64_t n, std::uint8_t slot) {
              held += gather_holds(n, slot, layer);
            });
          return held;
        }) {
    activation_bytes_ = static_cast<std::uint64_t>(2 * shape_.sp_tokens() * static_cast<double>(m_.residual_width()));
    total_virtual_ = strategy::path_stages(c_.schedule, c_.pp, strategy::chunks_per_stage(c_));
    if (c_.offload_modules != 0) plan_offloads();
    if (node_order()) out_.share_lane_streams();
  }

  void build() {
    const auto order =
        strategy::make_pipeline_order(c_.schedule, ctx_.stage, c_.pp, c_.num_microbatches(),
                                      strategy::chunks_per_stage(c_), c_.overlap_moe_expert_parallel_comm);
    // The step after which each chunk's weight gradients are final.
    std::vector<std::size_t> final_step(ctx_.chunks.size(), 0);
    for (std::size_t i = 0; i < order.size(); ++i)
      if (order[i].pass == Pass::Backward || order[i].pass == Pass::BackwardWeight)
        final_step[static_cast<std::size_t>(order[i].chunk)] = i;
    const std::vector<P2pCall> calls =
        megatron_p2p_calls(c_, order, [this](const strategy::PipelineStep& st) { return receives(st); });
    // Megatron-Core's full_iteration CUDA graph: every micro-batch's forward
    // and backward and the gradient reduction (to build_step_end's optimizer).
    out_.set_full_graph(c_.cuda_graph_impl == strategy::CudaGraphImpl::FullIteration);
    prologue();
    for (std::size_t i = 0; i < order.size(); ++i) {
      const auto& step = order[i];
      // An overlapped pair (DualPipe's, combined 1F1B's): this forward on
      // lane 0, the backward after it on lane 1, both free to run at once
      // (each one's communication under the other's kernels), joined
      // afterwards. Combined 1F1B issues the two layer by layer, as
      // Megatron-Core's TransformerModelChunkSchedulePlan.run does: the
      // backward's output layer, the forward's embedding, then for each
      // layer index the backward's layer and the forward's, then the
      // forward's output layer and the backward's embedding. Its kernels
      // go to one compute stream in that order, so each layer pair starts
      // once the pair before it is done: the forward never runs layers
      // ahead of the backward that frees their memory (the two share the
      // GPU within a pair, each one's exchanges under the other's kernels).
      const bool pair_forward = step.overlapped_with_next && i + 1 < order.size();
      if (pair_forward && node_order()) {
        const auto& next = order[i + 1];
        PTSIM_ASSERT(next.pass == Pass::Backward, "combined 1F1B pairs a forward with a full backward");
        const auto bchunk = static_cast<std::size_t>(next.chunk);
        combined_pair(static_cast<std::int32_t>(step.microbatch), static_cast<std::size_t>(step.chunk), &calls[i],
                      static_cast<std::int32_t>(next.microbatch), bchunk, i + 1 == final_step[bchunk], &calls[i + 1]);
        ++i;
        continue;
      }
      if (pair_forward && c_.overlap_moe_expert_parallel_comm) {
        PassPieces f =
            forward_pieces(static_cast<std::int32_t>(step.microbatch), static_cast<std::size_t>(step.chunk), &calls[i]);
        const auto& next = order[i + 1];
        PTSIM_ASSERT(next.pass == Pass::Backward, "combined 1F1B pairs a forward with a full backward");
        const auto bchunk = static_cast<std::size_t>(next.chunk);
        PassPieces b = backward_pieces(static_cast<std::int32_t>(next.microbatch), bchunk, i + 1 == final_step[bchunk],
                                       false, &calls[i + 1]);
        out_.fork_lane();
        const auto on = [&](int lane, const std::function<void()>& piece) {
          out_.set_lane(lane);
          piece();
        };
        on(1, b.before);
        on(0, f.before);
        for (std::size_t k = 0; k < std::max(f.layers.size(), b.layers.size()); ++k) {
          out_.sync_lanes();
          if (k < b.layers.size()) on(1, b.layers[k]);
          if (k < f.layers.size()) on(0, f.layers[k]);
        }
        on(0, f.after);
        on(1, b.after);
        out_.join_lanes();
        ++i;
        continue;
      }
      const bool pair_backward = i > 0 && order[i - 1].overlapped_with_next;
      if (pair_forward) out_.fork_lane();
      if (pair_backward) out_.set_lane(1);
      const auto mb = static_cast<std::int32_t>(step.microbatch);
      const auto chunk = static_cast<std::size_t>(step.chunk);
      const P2pCall* call = &calls[i];
      const bool final = i == final_step[chunk];
      switch (step.pass) {
        case Pass::Forward: run(forward_pieces(mb, chunk, call)); break;
        case Pass::Backward: run(backward_pieces(mb, chunk, final, false, call)); break;
        case Pass::BackwardInput: run(backward_pieces(mb, chunk, false, true, call)); break;
        case Pass::BackwardWeight: weight_gradients(mb, chunk, final); break;
      }
      if (pair_backward) out_.join_lanes();
    }
    finish_step();
  }

 private:
  // Whether a step of the schedule opens with a pipeline receive.
  bool receives(const strategy::PipelineStep& step) const {
    const auto chunk = static_cast<std::size_t>(step.chunk);
    switch (step.pass) {
      case Pass::Forward: return !first_virtual(chunk);
      case Pass::Backward:
      case Pass::BackwardInput: return !last_virtual(chunk);
      case Pass::BackwardWeight: return false;
    }
    return false;
  }

  // Megatron-Core's combined 1F1B issued node by node (LayerNode): without
  // ZeRO-3's gathers and activation offloading, whose per-layer hooks the
  // pairs of whole layers below still follow.
  bool node_order() const {
    return c_.overlap_moe_expert_parallel_comm && m_.is_moe() && !zero3() && c_.offload_modules == 0 && !dualpipe();
  }

  // One combined 1F1B pair, the forward of micro-batch `fmb` on lane 0 and
  // the backward of `bmb` on lane 1, in the order Megatron-Core issues it
  // (TransformerModelChunkSchedulePlan.run: the backward's output layer, the
  // forward's embedding, the layers, the forward's output layer, the
  // backward's embedding; per layer pair TransformerLayerSchedulePlan.run at
  // d98e8a64dd), both lanes on one compute and one expert-parallel stream
  // (ProgramBuilder::share_lane_streams), each lane's nodes after its
  // previous one (the micro-batch's CUDA event), the deferred weight
  // gradients beside that chain (backward_dw records no event):
  //   comm:    combine_bwd | dispatch_fwd, dispatch_bwd | combine_fwd
  //   compute: pre_dispatch_fwd | mlp_bwd, mlp_bwd_dw, mlp_fwd | pre_dispatch_bwd, its dw
  // The combine node's kernels (unpermutation, residual), which
  // Megatron-Core runs on the communication stream beside the other
  // micro-batch's compute, are issued here on the compute stream after the
  // pre-dispatch backward that they would run beside, and the combine
  // backward's before its exchange.
  void combined_pair(std::int32_t fmb, std::size_t fchunk, const P2pCall* fcall, std::int32_t bmb, std::size_t bchunk,
                     bool final, const P2pCall* bcall) {
    using N = LayerNode;
    const PassPieces f = forward_pieces(fmb, fchunk, fcall);
    const PassPieces b = backward_pieces(bmb, bchunk, final, false, bcall);
    out_.fork_lane();
    out_.set_lane(1);
    b.before();
    out_.set_lane(0);
    f.before();
    const std::int64_t nf = ctx_.chunks[fchunk].count, nb = ctx_.chunks[bchunk].count;
    for (std::int64_t k = 0; k < std::max(nf, nb); ++k) {
      const std::int64_t fl = k < nf ? layer_index(fchunk, k) : -1;
      const std::int64_t bl = k < nb ? layer_index(bchunk, nb - 1 - k) : -1;
      const auto node = [&](int lane, std::int64_t layer, std::int32_t mb, N n) {
        if (layer < 0) return;
        out_.set_lane(lane);
        if (const auto block = blocks_.layer_node(layer, n))
          out_.instantiate(*block, mb, static_cast<std::int32_t>(layer));
      };
      const auto fwd = [&](N n) { node(0, fl, fmb, n); };
      const auto bwd = [&](N n) { node(1, bl, bmb, n); };
      // A deferred weight-gradient node: on the compute stream, outside the
      // backward's chain; the last one is what the layer's gradient
      // reduction waits for.
      const auto beside = [&](N n, bool gradients) {
        if (bl < 0) return;
        out_.set_lane(1);
        const auto chain = out_.last_kernel();
        const auto block = blocks_.layer_node(bl, n);
        if (block) out_.instantiate(*block, bmb, static_cast<std::int32_t>(bl));
        if (gradients) dp_.layer_gradients(bl, bmb, final);
        if (block) out_.set_last_kernel(chain);
      };
      const bool rerun = bl >= 0 && !blocks_.lists(bl).recomputed.empty();
      const bool rerun_in_mlp = rerun && blocks_.recompute_in_mlp(bl);
      const auto recompute = [&] {
        out_.set_lane(1);
        out_.instantiate(blocks_.layer_recompute(bl, false), bmb, static_cast<std::int32_t>(bl));
      };
      bwd(N::CombineBwdPre);
      bwd(N::CombineBwd);
      if (fl >= 0) {
        out_.set_lane(0);
        wait_gathered(param_gather_, fl);
      }
      fwd(N::PreDispatch);
      if (rerun_in_mlp) recompute();
      bwd(N::MlpBwd);
      fwd(N::Dispatch);
      beside(N::MlpDw, false);
      bwd(N::DispatchBwd);
      fwd(N::Mlp);
      fwd(N::Combine);
      if (rerun && !rerun_in_mlp) recompute();
      bwd(N::PreDispatchBwd);
      fwd(N::CombinePost);
      beside(N::PreDispatchDw, true);
    }
    out_.set_lane(0);
    f.after();
    out_.set_lane(1);
    b.after();
    out_.join_lanes();
  }

  // ---- model structure ----------------------------------------------------
  std::int64_t virtual_stage(std::size_t chunk) const {
    return strategy::virtual_stage(c_.schedule, ctx_.stage, c_.pp, static_cast<std::int64_t>(chunk));
  }
  bool first_virtual(std::size_t chunk) const { return virtual_stage(chunk) == 0; }
  bool last_virtual(std::size_t chunk) const { return virtual_stage(chunk) == total_virtual_ - 1; }
  const Channels& channels(std::size_t chunk) const {
    return dualpipe() && chunk == 1 ? kDirection1 : kDirection0;
  }
  std::int32_t layer_index(std::size_t chunk, std::int64_t l) const {
    return static_cast<std::int32_t>(ctx_.chunks[chunk].first + l);
  }
  // Checkpointed whole (full), or by torchtitan's op policy (LayerBlocks
  // keeps what it keeps and reruns the rest).
  bool fully_recomputed(std::int64_t l_in_chunk) const {
    if (c_.recompute == strategy::RecomputeKind::Op) return true;
    return c_.recompute == strategy::RecomputeKind::Full &&
           (c_.recompute_num_layers == 0 || l_in_chunk < c_.recompute_num_layers);
  }
  bool zero3() const { return c_.zero_stage >= 3; }
  bool dualpipe() const { return strategy::describe(c_.schedule).two_directions; }

  // A pipeline send or receive of one activation (or its gradient). With
  // Megatron-LM 2021's scatter-gather (no SP, TP > 1) each TP rank moves
  // 1/t of it and the receivers all-gather the pieces over TP.
  // `sync`: the host synchronizes the device once it has issued it (the
  // end of a batched send/receive call, ParallelConfig::batch_p2p_sync).
  std::uint32_t transfer_block(const std::string& name, bool send, std::uint8_t stream, std::uint8_t slot,
                               bool sync) {
    const bool scatter = c_.scatter_gather_pipeline && !c_.sequence_parallel && c_.tp > 1;
    const std::uint64_t bytes = scatter ? activation_bytes_ / static_cast<std::uint64_t>(c_.tp) : activation_bytes_;
    const std::uint8_t flags = sync ? taskgraph::kHostSync : 0;
    return out_.block(sync ? name + ".sync" : name, [&](BlockRecorder& b) {
      b.begin_list();
      if (send) {
        b.emit_send(stream, slot, bytes, name, flags);
        return;
      }
      b.emit_recv(stream, slot, bytes, name, flags);
      if (!scatter) return;
      OpSpec gather = collective_op(name + ".allgather", CollectiveKind::AllGather, CommGroup::TensorParallel,
                                    static_cast<double>(activation_bytes_));
      gather.after = 0;  // the received piece
      b.emit(gather, b.names_of({gather}, "")[0], categories::kPipelineParallel, 0, 0);
    });
  }

  // Bytes a parameter of layer `layer` is gathered in: one under fp8
  // parameter gathering, half under NVFP4's (Megatron-Core keeps the norms'
  // parameters in bf16, a few in 10^4 of a layer's, counted as the weights
  // here), else two, as in a layer first_last_layers_bf16 keeps in bf16;
  // MXFP8's are gathered in bf16 (strategy::Quantization).
  double layer_parameter_bytes(std::int64_t layer) const {
    if (mxfp8_fsdp_parameters()) return shape_.quantization.copy_bytes;
    return quantized_param_gather() && !shape_.bf16_layer(layer) ? shape_.quantization.param_gather_bytes : 2.0;
  }
  // Megatron-FSDP's FP8 parameters (see resolve_run): nothing cast from
  // bf16 in the step. MXFP8's: the row-wise copy gathered for the forward,
  // the column-wise one for the backward, each with its scales (an
  // MXFP8Tensor "needs transpose data", gathered as it is).
  bool fsdp_fp8_parameters() const { return c_.megatron_fsdp && zero3() && c_.fp8_param_gather; }
  bool mxfp8_fsdp_parameters() const { return fsdp_fp8_parameters() && !shape_.quantization.per_tensor; }
  bool quantized_param_gather() const { return c_.fp8_param_gather && shape_.quantization.param_gather_quantized(); }

  // ---- activation offload ---------------------------------------------------
  // Megatron-Core's fine-grained activation offloading: what each layer's
  // forward saves as the input of an offload module, at least
  // min_offloaded_tensor_size elements long, less what its recomputed
  // modules drop. Each chunk's last such layer keeps its inputs: its backward
  // comes first, and Megatron-Core does not offload the last group of a
  // name whose backward follows (should_bulk_offload) or within its reload
  // margin (post_warmup_callback).
  void plan_offloads() {
    for (const auto& chunk : ctx_.chunks) {
      std::int64_t last = -1;
      for (std::int64_t layer = chunk.first; layer < chunk.first + chunk.count; ++layer) {
        std::uint64_t bytes = 0;
        for (const OpSpec& op : blocks_.lists(layer).ops.forward)
          if ((op.offload_modules & c_.offload_modules) &&
              op.offload_elements >= static_cast<double>(c_.min_offloaded_tensor_size))
            bytes += op.kept_bytes(c_.selective_modules());
        if (bytes > 0) {
          offloaded_[layer] = bytes;
          last = layer;
        }
      }
      if (last >= 0) offloaded_.erase(last);
    }
  }
  std::uint64_t offloaded(std::int64_t layer) const {
    const auto it = offloaded_.find(layer);
    return it == offloaded_.end() ? 0 : it->second;
  }
  // The copy of a layer's offloaded inputs to the host after its forward's
  // last kernel, which frees them once done; or back from the host, which
  // holds them again from its start.
  std::uint32_t offload_copy(std::int64_t layer, std::int32_t mb, bool to_host) {
    const std::uint64_t bytes = offloaded(layer);
    const std::string name = to_host ? "offload.to_host" : "offload.from_host";
    // A copy back waits for the copies to the host issued before it (the
    // reload waits for its group's offload event; copies to the host finish
    // in issue order).
    const auto block = out_.block(fmt::format("{}.{}", name, bytes), [&](BlockRecorder& b) {
      const auto id = b.emit_host_copy(to_host ? streams::kOffloadToHost : streams::kOffloadFromHost, bytes, name,
                                       to_host ? 0 : bytes, to_host ? bytes : 0);
      if (!to_host) b.follow_stream(id, streams::kOffloadToHost);
    });
    return out_.instantiate(block, mb, static_cast<std::int32_t>(layer));
  }
  // Before layer `layer`'s backward (its recomputation first): its inputs
  // must be back, and the layer whose backward comes next starts coming
  // back now, a layer ahead (bulk_reload: each group's backward reloads the
  // next group's).
  void reload_around(std::int64_t layer, std::int64_t first, std::int32_t mb) {
    if (const auto it = reloads_.find(layer); it != reloads_.end()) {
      out_.wait_for({it->second, 0});
      reloads_.erase(it);
    }
    if (layer > first && offloaded(layer - 1) > 0) reloads_[layer - 1] = offload_copy(layer - 1, mb, false);
  }

  // ---- steps --------------------------------------------------------------
  void prologue() {
    // FP8 and NVFP4: every linear weight is quantized (with its transpose,
    // or both block-scaled copies) once per step and reused by all
    // micro-batches (Transformer Engine's is_first_microbatch caching);
    // current scaling and NVFP4 read it once more for its amax first. With
    // quantized parameter gathering the weights arrive quantized and only
    // their column-wise copy is made from the row-wise one (per tensor and
    // blockwise's 128×128 weight blocks: read 1, write 1 bytes a weight,
    // _create_columnwise; NVFP4's 16×16 blocks: half that,
    // _nvfp4_2d_multi_tensor_transpose); MXFP8 gathers bf16 and casts as
    // without it. Per tensor on a GPU whose FP8 GEMMs take any layout, the
    // gathered copy serves both ways: nothing to make. torchao's Float8
    // (torchtitan's modules) casts its weights in every layer's forward
    // instead (LayerBuilder::torchao_weight_cast).
    const bool transpose = quantized_param_gather();
    const double weights = static_cast<double>(ctx_.quantized_layer_parameters.total());
    if (shape_.quantization.active && weights > 0 && !shape_.torch_modules() && !fsdp_fp8_parameters() &&
        !(transpose && shape_.quantization.param_transpose_bytes == 0)) {
      const std::string name = fmt::format("{}.weight_{}", shape_.quantization.tag, transpose ? "transpose" : "cast");
      const double bytes_per_weight =
          transpose ? shape_.quantization.param_transpose_bytes : shape_.quantization.cast_bytes();
      const OpSpec cast = memory_op(name, bytes_per_weight * weights);
      out_.instantiate(blocks_.boundary_block(name, {cast}, "", categories::kForward, true), -1, -1);
    }
    // Modules module_precision runs in MXFP8 inside NVFP4 training: their
    // weights cast into MXFP8's two copies (module_precision excludes
    // parameter gathering).
    if (const auto mxfp8 = stage_module_parameters(m_, c_, ctx_.stage, Dtype::Mxfp8); mxfp8 > 0) {
      const strategy::Quantization mx = strategy::module_quantization_of(Dtype::Mxfp8, c_.fp8_any_layout);
      const OpSpec cast = memory_op("fp8.module_weight_cast", mx.cast_bytes() * static_cast<double>(mxfp8));
      out_.instantiate(blocks_.boundary_block(cast.name, {cast}, "", categories::kForward, true), -1, -1);
    }
    // Sharded optimizers whose parameter all-gather overlaps the forward: the
    // updated parameters of each layer arrive before its first forward.
    if (c_.zero_stage >= 1 && c_.zero_stage <= 2 && c_.overlap_param_gather) {
      for (std::size_t c = 0; c < ctx_.chunks.size(); ++c)
        for (std::int64_t l = 0; l < ctx_.chunks[c].count; ++l) {
          const std::int64_t layer = ctx_.chunks[c].first + l;
          const RankParameters p = layer_parameters_per_rank(m_, c_, layer);
          std::vector<TaskRef> refs;
          for (const auto& [n, slot] : {std::pair{p.dense, slots::kDataParallel}, {p.expert, slots::kExpertDataParallel}})
            if (n > 0 && dp_.group_of(slot) > 1) {
              const auto i = out_.instantiate(dp_.collective("zero.param_allgather", slot, CollectiveKind::AllGather,
                                                             static_cast<std::uint64_t>(layer_parameter_bytes(layer) *
                                                                                        static_cast<double>(n)),
                                                             false),
                                              -1, static_cast<std::int32_t>(layer));
              refs.push_back({i, 0});
            }
          param_gather_[layer] = refs;
        }
    }
  }

  // FSDP2 under pipeline parallelism holds a block's unsharded bf16
  // gradients from its first backward to the reduce-scatter after its last;
  // counted with the gathered parameters, from the gather on (an upper bound
  // on the memory of the forwards before the first backward).
  std::uint64_t unsharded_gradient_bytes(std::int64_t n) const {
    return c_.fsdp_gathers_once_a_step() ? static_cast<std::uint64_t>(2 * n) : 0;
  }
  // What a ZeRO-3 gather of `n` parameters allocates and the layer's release
  // frees: the other ranks' shards, and the unsharded gradients above.
  std::uint64_t gather_holds(std::int64_t n, std::uint8_t slot, std::int64_t layer) const {
    return dp_.others_shards(n, dp_.group_of(slot), layer_parameter_bytes(layer)) + unsharded_gradient_bytes(n);
  }

  // A layer's parameter all-gather: it waits for the kernel issued before it,
  // and the layer waits for it (wait_gathered).
  // Under Hybrid-FSDP the step's first gather of a layer is preceded by the
  // gather of its inner-DP shard across the optimizer instances (both
  // MXFP8 copies), which the gather inside the instance follows.
  void zero3_gather(std::int64_t layer, std::int32_t mb, bool backward) {
    std::vector<TaskRef> refs;
    const bool outer = c_.outer_optimizer_sharding && !gathered_this_step_.contains(layer);
    const auto at = static_cast<std::int32_t>(layer);
    dp_.for_each_zero3_gathered(layer, [&](std::int64_t n, std::uint8_t slot) {
      // Under torchao's float8 all-gather (FSDP2) one byte a parameter: the
      // block's norm weights, 2 in 10^4 of its parameters, counted with them.
      const double bytes = layer_parameter_bytes(layer);
      if (outer) {
        const auto i = dp_.outer_gather(n, slot, mxfp8_fsdp_parameters() ? 2 * bytes : bytes, mb, at);
        if (dp_.group_of(slot) == 1) refs.push_back({i, 0});
      }
      if (dp_.group_of(slot) == 1) return;
      if (c_.zero3_blocking && !outer) {
        refs.push_back(dp_.blocking_gather(n, slot, bytes, gather_holds(n, slot, layer), backward, mb, at));
        return;
      }
      const auto i = out_.instantiate(dp_.collective("zero3.param_allgather", slot, CollectiveKind::AllGather,
                                                     static_cast<std::uint64_t>(bytes * static_cast<double>(n)), false,
                                                     gather_holds(n, slot, layer), dp_.zero3_flags(), outer),
                                      mb, at);
      refs.push_back({i, 0});
    });
    gathers_[layer] = refs;
    gathered_this_step_.insert(layer);
  }

  // DeepSpeed 0.3 releases most of a layer's gathered tensors again after
  // its recomputed forward and gathers them a third time for the backward
  // (DataParallel::regathered_after_recompute), which waits for them. The
  // layer's holding is counted once, from its first gather to its release:
  // the tensors freed after the recomputed forward take the same bytes back
  // here.
  void regather_after_recompute(std::int64_t layer, std::int32_t mb) {
    if (!zero3() || !c_.zero3_blocking) return;
    for (const std::int64_t n : dp_.regathered_after_recompute(layer))
      out_.wait_for(dp_.blocking_gather(n, slots::kDataParallel, layer_parameter_bytes(layer), 0, true, mb,
                                        static_cast<std::int32_t>(layer)));
    // The backward's module hooks fetch again, kept tensors or not.
    dp_.fetch_norms(layer, true, mb);
  }

  // Whether `layer` had a gather to wait for.
  bool wait_gathered(std::unordered_map<std::int64_t, std::vector<TaskRef>>& map, std::int64_t layer) {
    const auto it = map.find(layer);
    if (it == map.end()) return false;
    for (const TaskRef& r : it->second) out_.wait_for(r);
    map.erase(it);
    return true;
  }

  // FSDP2 copies a block's gathered parameters out of the all-gather buffer
  // into the parameters' own tensors on the compute stream, after waiting
  // for the gather (foreach_all_gather_copy_out: split_with_sizes_copy, read
  // and write 2 bytes an element; 1 gathered in fp8).
  void fsdp_copy_out(std::int64_t layer, std::int32_t mb, bool backward) {
    gathered_weights_kernel(layer, mb, backward, "fsdp.all_gather_copy_out", fmt::format("fsdp.copy_out.{}", backward),
                            2 * layer_parameter_bytes(layer));
  }

  // Megatron-FSDP's per-tensor FP8 weights, gathered again for the
  // backward, transposed for its GEMMs on a GPU whose FP8 GEMMs take one
  // layout (fp8_create_transpose_cache after the gather: read 1, write 1
  // byte a weight); the forward's transposes are dropped after it
  // (keep_fp8_transpose_cache off, Megatron-Bridge's setting).
  void fp8_transpose(std::int64_t layer, std::int32_t mb) {
    gathered_weights_kernel(layer, mb, true, "fp8.weight_transpose", "fp8.weight_transpose",
                            shape_.quantization.param_transpose_bytes);
  }

  // A memory-bound kernel of the pass over a layer's gathered ZeRO-3
  // parameters, `bytes_per_parameter` moved for each.
  void gathered_weights_kernel(std::int64_t layer, std::int32_t mb, bool backward, const std::string& op_name,
                               const std::string& key, double bytes_per_parameter) {
    std::int64_t n = 0;
    dp_.for_each_zero3_part(layer, [&](std::int64_t part, std::uint8_t) { n += part; });
    const OpSpec op = memory_op(op_name, bytes_per_parameter * static_cast<double>(n));
    out_.instantiate(blocks_.boundary_block(fmt::format("{}.{}", key, n), {op}, "",
                                            backward ? categories::kBackward : categories::kForward, true),
                     mb, static_cast<std::int32_t>(layer));
  }

  // A pass as the pieces it is issued in: what comes before its layers, each
  // layer, what comes after (combined 1F1B interleaves two passes' pieces).
  struct PassPieces {
    std::function<void()> before;
    std::vector<std::function<void()>> layers;
    std::function<void()> after;
  };
  static void run(const PassPieces& pass) {
    pass.before();
    for (const auto& layer : pass.layers) layer();
    pass.after();
  }

  // The layers of a chunk in `order`, each after the previous; ZeRO-3
  // gathers a layer's parameters while the one before it runs, or, blocking
  // (DeepSpeed 0.3), as the layer is reached. Issued in order.
  template <typename Run>
  std::vector<std::function<void()>> layer_pieces(std::size_t chunk, bool reverse, std::int32_t mb, Run run) {
    const std::int64_t n = ctx_.chunks[chunk].count;
    const std::int64_t first = ctx_.chunks[chunk].first;
    const auto layer_at = [first, n, reverse](std::int64_t i) { return first + (reverse ? n - 1 - i : i); };
    const std::int64_t ahead = c_.zero3_blocking ? 0 : 1;  // layers gathered before the one running
    std::vector<std::function<void()>> pieces;
    // In backward FSDP gathers again only the blocks it resharded after their
    // forward; under pipeline parallelism FSDP2 gathers in a block's first
    // forward of the step only.
    const auto gathers = [this, reverse](std::int64_t layer) {
      if (!zero3()) return false;
      if (reverse) return c_.reshards_after_forward(layer, m_.num_layers);
      return !c_.fsdp_gathers_once_a_step() || !gathered_this_step_.contains(layer);
    };
    for (std::int64_t i = 0; i < n; ++i)
      pieces.emplace_back([this, i, n, ahead, first, layer_at, mb, run, gathers, reverse] {
        const std::int64_t layer = layer_at(i);
        if (ahead > 0 && i == 0 && gathers(layer)) zero3_gather(layer, mb, reverse);
        if (i + ahead < n && gathers(layer_at(i + ahead))) zero3_gather(layer_at(i + ahead), mb, reverse);
        if (zero3() && wait_gathered(gathers_, layer)) {
          dp_.fetch_norms(layer, reverse, mb);
          if (c_.fsdp_version == 2) fsdp_copy_out(layer, mb, reverse);
          if (reverse && fsdp_fp8_parameters() && shape_.quantization.transposes()) fp8_transpose(layer, mb);
        }
        wait_gathered(param_gather_, layer);
        run(layer, layer - first);
      });
    return pieces;
  }

  PassPieces forward_pieces(std::int32_t mb, std::size_t chunk, const P2pCall* call) {
    PassPieces pass;
    pass.before = [this, mb, chunk, call] {
      const Channels& ch = channels(chunk);
      if (call->early_recv) {
        const auto bchunk = static_cast<std::size_t>(call->early_recv->chunk);
        const Channels& bch = channels(bchunk);
        out_.instantiate(transfer_block(std::string("pp.recv_gradient") + bch.suffix, false, bch.recv_backward_stream,
                                        bch.recv_backward_slot, call->recv_syncs && first_virtual(chunk)),
                         static_cast<std::int32_t>(call->early_recv->microbatch), -1);
      }
      if (!first_virtual(chunk))
        out_.instantiate(transfer_block(std::string("pp.recv_activation") + ch.suffix, false, ch.recv_forward_stream,
                                        ch.recv_forward_slot, call->recv_syncs),
                         mb, -1);
      if (first_virtual(chunk)) out_.instantiate(blocks_.embedding_block(Pass::Forward), mb, -1);
    };
    pass.layers = layer_pieces(chunk, false, mb, [this, mb](std::int64_t layer, std::int64_t l) {
      out_.instantiate(blocks_.layer_forward(layer, fully_recomputed(l)), mb, static_cast<std::int32_t>(layer));
      if (offloaded(layer) > 0) offload_copy(layer, mb, true);
    });
    pass.after = [this, mb, chunk, call] {
      const Channels& ch = channels(chunk);
      if (last_virtual(chunk)) {
        out_.instantiate(blocks_.output_block(Pass::Forward), mb, -1);
      } else {
        out_.instantiate(transfer_block(std::string("pp.send_activation") + ch.suffix, true, ch.send_forward_stream,
                                        ch.send_forward_slot, call->send_syncs),
                         mb, -1);
      }
      // FP8: the amax of every fp8 tensor of the forward is reduced over the
      // stage's ranks as the forward ends (Transformer Engine's delayed
      // scaling; current scaling keeps each amax local, but for the TP
      // reductions of gathered tensors in the layers). A stage of one rank
      // has nothing to reduce (and no communicator for it).
      if (c_.precision == Dtype::Fp8 && c_.fp8_recipe == strategy::Fp8Recipe::Delayed && c_.tp * c_.cp * c_.dp > 1) {
        int tensors = 0;
        for (std::int64_t l = 0; l < ctx_.chunks[chunk].count; ++l)
          tensors += 3 * fp8_gemms_per_layer(m_, ctx_.chunks[chunk].first + l);
        const auto bytes = static_cast<std::uint64_t>(4 * tensors);
        out_.instantiate(out_.block(fmt::format("fp8.amax_allreduce.{}", bytes),
                                    [&](BlockRecorder& b) {
                                      b.emit_collective(streams::kTensorParallel, slots::kAmax,
                                                        categories::kTensorParallel, bytes, "fp8.amax_allreduce", true);
                                    }),
                         mb, -1);
      }
    };
    return pass;
  }

  // Whether a backward block of `part` frees its layer's gathered ZeRO-3
  // parameters: the last block of the step to use them. Each full backward
  // or B otherwise, its W never (the B has freed them); FSDP2 under pipeline
  // parallelism keeps them to the step's last backward of the chunk, which
  // under a zero-bubble split is its last W (the unsharded gradients it
  // accumulates into are held with them).
  bool releases_gathered(strategy::Pass part, bool final) const {
    if (c_.fsdp_gathers_once_a_step()) return final && part != Pass::BackwardInput;
    return part != Pass::BackwardWeight;
  }

  // Full backward (input_only false) or the B of a zero-bubble split.
  PassPieces backward_pieces(std::int32_t mb, std::size_t chunk, bool final, bool input_only, const P2pCall* call) {
    const strategy::Pass which = input_only ? Pass::BackwardInput : Pass::Backward;
    PassPieces pass;
    pass.before = [this, mb, chunk, final, input_only, which, call] {
      const Channels& ch = channels(chunk);
      if (!last_virtual(chunk) && !call->skip_recv)
        out_.instantiate(transfer_block(std::string("pp.recv_gradient") + ch.suffix, false, ch.recv_backward_stream,
                                        ch.recv_backward_slot, call->recv_syncs),
                         mb, -1);
      if (last_virtual(chunk)) {
        out_.instantiate(blocks_.output_block(which), mb, -1);
        if (!input_only) dp_.output_gradients(final);
      }
    };
    pass.layers =
        layer_pieces(chunk, true, mb, [this, mb, final, input_only, which](std::int64_t layer, std::int64_t l) {
          if (c_.offload_modules != 0) reload_around(layer, layer - l, mb);
          if (fully_recomputed(l)) {
            out_.instantiate(blocks_.layer_recompute(layer, true), mb, static_cast<std::int32_t>(layer));
            regather_after_recompute(layer, mb);
          } else if (!blocks_.lists(layer).recomputed.empty()) {
            out_.instantiate(blocks_.layer_recompute(layer, false), mb, static_cast<std::int32_t>(layer));
          }
          out_.instantiate(blocks_.layer_backward(layer, which, releases_gathered(which, final)), mb,
                           static_cast<std::int32_t>(layer));
          if (!input_only) dp_.layer_gradients(layer, mb, final);
        });
    pass.after = [this, mb, chunk, final, input_only, which, call] {
      const Channels& ch = channels(chunk);
      if (!first_virtual(chunk)) {
        out_.instantiate(transfer_block(std::string("pp.send_gradient") + ch.suffix, true, ch.send_backward_stream,
                                        ch.send_backward_slot, call->send_syncs),
                         mb, -1);
      } else {
        out_.instantiate(blocks_.embedding_block(which), mb, -1);
        if (!input_only) dp_.embedding_gradients(final);
      }
      if (!input_only) dp_.end_of_gradients(final);
    };
    return pass;
  }

  // The W of a zero-bubble split: weight gradients of every layer of the chunk.
  void weight_gradients(std::int32_t mb, std::size_t chunk, bool final) {
    if (last_virtual(chunk)) {
      out_.instantiate(blocks_.output_block(Pass::BackwardWeight), mb, -1);
      dp_.output_gradients(final);
    }
    const std::int64_t n = ctx_.chunks[chunk].count;
    for (std::int64_t i = n - 1; i >= 0; --i) {
      const std::int64_t layer = ctx_.chunks[chunk].first + i;
      out_.instantiate(blocks_.layer_backward(layer, Pass::BackwardWeight,
                                              releases_gathered(Pass::BackwardWeight, final)),
                       mb, static_cast<std::int32_t>(layer));
      dp_.layer_gradients(layer, mb, final);
    }
    if (first_virtual(chunk)) {
      out_.instantiate(blocks_.embedding_block(Pass::BackwardWeight), mb, -1);
      dp_.embedding_gradients(final);
    }
    dp_.end_of_gradients(final);
  }

  void finish_step() { build_step_end(ctx_, out_, dp_, first_virtual_any(), last_virtual_any()); }

  bool first_virtual_any() const {
    for (std::size_t c = 0; c < ctx_.chunks.size(); ++c)
      if (first_virtual(c)) return true;
    return false;
  }
  bool last_virtual_any() const {
    for (std::size_t c = 0; c < ctx_.chunks.size(); ++c)
      if (last_virtual(c)) return true;
    return false;
  }

  const StageContext& ctx_;
  const strategy::ParallelConfig& c_;
  const model::ModelSpec& m_;
  ProgramBuilder out_;
  MicroShape shape_;
  DataParallel dp_;
  LayerBlocks blocks_;
  std::uint64_t activation_bytes_ = 0;
  std::int64_t total_virtual_ = 1;
  std::unordered_map<std::int64_t, std::vector<TaskRef>> gathers_, param_gather_;
  std::unordered_map<std::int64_t, std::uint64_t> offloaded_;  // layer → bytes its forward moves to the host
  std::unordered_map<std::int64_t, std::uint32_t> reloads_;    // layer → the instance bringing them back
  std::unordered_set<std::int64_t> gathered_this_step_;  // blocks FSDP2 keeps gathered (fsdp_gathers_once_a_step)
};

}  // namespace

void build_stage_program(const StageContext& ctx, NameTable& names, taskgraph::Program& program) {
  StageBuilder(ctx, names, program).build();
}

}  // namespace ptsim::workload::internal

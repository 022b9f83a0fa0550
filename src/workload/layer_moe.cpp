// A mixture-of-experts layer's ops (see internal/layer_builder.hpp and
// layer_ops.cpp's header): Megatron-Core's token dispatchers (all-to-all,
// all-gather, flex).
#include "internal/layer_builder.hpp"

namespace ptsim::workload::internal {

void LayerBuilder::moe() {
  const double E = static_cast<double>(m_.num_moe_experts), k = static_cast<double>(m_.moe_router_topk);
  const double ep = static_cast<double>(shape_.ep), etp = static_cast<double>(shape_.expert_tp);
  const double fe = static_cast<double>(m_.moe_ffn_hidden_size);
  const double T = Nsp_;  // tokens entering this rank's router
  // The width the routed tokens travel at and the experts read and write:
  // the hidden size, or a latent MoE's latent size.
  const double w = static_cast<double>(m_.moe_token_width());
  const double L = static_cast<double>(m_.moe_latent_size);
  const double local_experts = E / ep;
  // Routed tokens this rank's experts process with balanced routing. This
  // rank is the busiest of its EP group (--moe-load-imbalance): it receives
  // that multiple of an even share, dropless; under a capacity factor every
  // expert is padded to its capacity and takes no more, the rest dropped.
  const double routed = T * k * etp;
  const double received = routed * (shape_.capacity_factor ? *shape_.capacity_factor : shape_.load_imbalance);
  // Its exchanges carry what it receives (dispatch) and sends back
  // (combine): an all-to-all lasts as long as its busiest receiver takes.
  const double load =
      shape_.capacity_factor ? std::min(shape_.load_imbalance, *shape_.capacity_factor) : shape_.load_imbalance;
  const double per_expert = std::max(1.0, std::round(received / local_experts));
  const double rows = per_expert * local_experts;
  // Padding to capacity costs time but is no model work: the expert GEMMs'
  // FLOPs count the routed tokens only.
  const double useful = routed / (per_expert * local_experts);
  const auto expert_gemm = [&](OpSpec op) {
    op.flops *= useful;
    return op;
  };
  const double fc1_out = (m_.gated_mlp() ? 2 : 1) * fe / etp;
  const std::string act = activation_name("moe.experts");
  const Dtype dt = gemm_dtype_;

  // Recomputing "moe" checkpoints the whole layer, exchanges included
  // (moe_layer.py: tensor_parallel.checkpoint of its forward): only its
  // input, the pre-MLP norm's output the router keeps, stays.
  const std::size_t begin = fw_.size();
  const std::size_t groups = bw_groups_.size();
  // Router: logits over the experts, fp32 softmax and top-k. Its input is
  // the pre-MLP norm's output, which recomputing "layernorm" drops.
  fw_.push_back(saving(matmul("moe.router", T, E, h_), 2 * T * h_));
  drop(begin, strategy::kRecomputeLayernorm, 2 * T * h_);
  fw_.push_back(saving(memory_op("moe.router.topk", T * E * 4 * 3, KernelClass::Softmax), T * E * 4));
  // A latent MoE projects the norm's output down before the dispatcher
  // sees it (MoELayer.preprocess): a Transformer Engine Linear whole on
  // every TP rank ("duplicated"), on this rank's tokens, no collective. Its
  // bf16 input is the router's, kept once; under FP8 it keeps its quantized
  // copy too, which recomputing "layernorm" drops with the rest.
  // The projections run in their own format where the run gives them one.
  constexpr auto kLatent = strategy::LinearModule::LatentProjection;
  double latent_in_saved = 0;
  if (L > 0)
    in_format(kLatent, [&] {
      latent_in_saved = fp8_ ? saved_input(T * h_) : 0;
      cast("moe.fc1_latent_proj", T, h_);
      fw_.push_back(saving(matmul("moe.fc1_latent_proj", T, L, h_, 1, gemm_dtype_), latent_in_saved));
      drop(fw_.size() - 1, strategy::kRecomputeLayernorm, latent_in_saved);
    });
  // With one expert-parallel rank every expert is local: the permuted
  // tokens need no exchange (and there is no group to exchange them in).
  const bool exchange = shape_.ep > 1;
  const strategy::MoeDispatcher dispatcher = shape_.moe_dispatcher;
  // The all-to-all dispatcher learns how many tokens each rank sends and
  // receives before its exchange: the per-expert counts are all-gathered
  // over the EP group (8 bytes an expert) and copied to the host, which
  // waits for them (megatron/core/transformer/moe/token_dispatcher.py at
  // d98e8a64dd, MoEAlltoAllTokenDispatcher.preprocess: "A synchronization
  // is needed before expert parallel AlltoAll communication to get the
  // `input_splits` and `output_splits` CPU values"). The backward reuses
  // the splits.
  if (exchange && dispatcher == strategy::MoeDispatcher::AllToAll) {
    OpSpec counts = collective_op("moe.dispatch.counts_allgather", CollectiveKind::AllGather, CommGroup::ExpertParallel,
                                  8 * E * ep);
    counts.flags |= taskgraph::kHostWaitsForTask;
    fw_.push_back(counts);
  }
  fw_.push_back(memory_op("moe.permute", T * k * w * 2 * 2));
  // The exchange each way: the all-to-all sends each token copy to its
  // expert's rank; the all-gather sends every token to every EP rank and
  // the combine reduce-scatters the outputs back; flex (DeepEP, HybridEP)
  // sends each token once per NVLink domain holding one of its experts,
  // forwarded there (taskgraph::ExpertDispatch).
  const auto exchange_op = [&](const std::string& name, bool dispatch) {
    switch (dispatcher) {
      case strategy::MoeDispatcher::AllGather:
        return collective_op(name, dispatch ? CollectiveKind::AllGather : CollectiveKind::ReduceScatter,
                             CommGroup::ExpertParallel, T * w * 2 * ep);
      case strategy::MoeDispatcher::Flex: {
        OpSpec op = collective_op(name, CollectiveKind::ExpertDispatch, CommGroup::ExpertParallel, T * w * 2 * load);
        const auto library = shape_.moe_flex_backend == strategy::MoeFlexBackend::HybridEP
                                 ? taskgraph::ExchangeLibrary::HybridEP
                                 : taskgraph::ExchangeLibrary::DeepEP;
        op.shape =
            taskgraph::expert_exchange_shape({static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(E), library,
                                              !dispatch, static_cast<std::uint32_t>(shape_.moe_flex_num_sms)});
        return op;
      }
      case strategy::MoeDispatcher::AllToAll: break;
    }
    return collective_op(name, CollectiveKind::AllToAll, CommGroup::ExpertParallel, T * k * w * 2 * load);
  };
  // The other dispatchers hand the experts device-side counts, which the
  // grouped GEMM copies to the host (experts.py at d98e8a64dd:
  // tokens_per_expert.tolist() for TE's m_splits, unless
  // moe_use_grouped_tensor, which the recipes leave off), so the host waits
  // for the exchange that made them: the all-gather dispatcher's
  // local_map.sum(...).cpu(); DeepEP's dispatch, whose "CPU will wait for
  // GPU's signal" (fused_a2a.py), HybridEP's when it sizes its buffers on the
  // fly ("CPU sync in dispatch"). Dropping and padding to a capacity fixes
  // the counts on the host instead.
  if (exchange) {
    OpSpec dispatch = exchange_op("moe.dispatch", true);
    const bool counts_from_dispatch = dispatcher == strategy::MoeDispatcher::AllGather ||
                                      (dispatcher == strategy::MoeDispatcher::Flex && !shape_.capacity_factor);
    if (counts_from_dispatch) dispatch.flags |= taskgraph::kHostWaitsForTask;
    fw_.push_back(dispatch);
  }
  if (etp > 1)
    fw_.push_back(collective_op("moe.dispatch.allgather", CollectiveKind::AllGather, CommGroup::ExpertTensorParallel,
                                T * k * w * 2 * etp * load));
  if (fp8_) fw_.push_back(memory_op("moe.experts.fc1" + q(".", "cast"), rows * w * cast_bytes()));
  fw_.push_back(
      saving(expert_gemm(matmul("moe.experts.fc1", per_expert, fc1_out, w, local_experts, dt)), saved_input(rows * w)));
  offloads(strategy::kOffloadExpertFc1 | strategy::kOffloadFusedGroupMlp, rows * w);
  // Recomputing "moe_act" reruns the activation as a CheckpointWithoutOutput
  // (experts.py, TEGroupedMLP): FC2 keeps no input, under FP8 not its
  // quantized copy either (set_save_original_input: it keeps the bf16
  // output, which the checkpoint frees, and quantizes it for its weight
  // gradient in backward).
  fw_.push_back(saving(memory_op(act, 2 * rows * (fc1_out + fe / etp)), 2 * rows * fc1_out));
  fw_.back().rerun_by |= strategy::kRecomputeMoeAct;
  offloads(strategy::kOffloadMoeAct | strategy::kOffloadFusedGroupMlp, rows * fc1_out);
  if (fp8_) fw_.push_back(memory_op("moe.experts.fc2" + q(".", "cast"), rows * fe / etp * cast_bytes()));
  fw_.push_back(saving(expert_gemm(matmul("moe.experts.fc2", per_expert, w, fe / etp, local_experts, dt)),
                       saved_input(rows * fe / etp)));
  offloads(strategy::kOffloadFusedGroupMlp, rows * fe / etp);
  drop(fw_.size() - 1, strategy::kRecomputeMoeAct, static_cast<double>(fw_.back().saved_bytes));
  if (etp > 1)
    fw_.push_back(collective_op("moe.combine.reducescatter", CollectiveKind::ReduceScatter,
                                CommGroup::ExpertTensorParallel, T * k * w * 2 * etp * load));
  if (exchange) fw_.push_back(exchange_op("moe.combine", false));
  fw_.push_back(saving(memory_op("moe.unpermute", T * k * w * 2 * 2 + T * w * 2), T * k * 4));
  // ... and projects the combined output back up (MoELayer.postprocess),
  // keeping its input for the weight gradient.
  if (L > 0)
    in_format(kLatent, [&] {
      cast("moe.fc2_latent_proj", T, L);
      fw_.push_back(saving(matmul("moe.fc2_latent_proj", T, h_, L, 1, gemm_dtype_), saved_input(T * L)));
    });

  std::vector<OpSpec> bw;
  if (L > 0)
    in_format(kLatent, [&] {
      cast_grad("moe.fc2_latent_proj", T, h_, bw);
      bw.push_back(matmul("moe.fc2_latent_proj.dgrad", T, L, h_, 1, gemm_dtype_));
      bw.push_back(
          weight_grad(freeing(matmul("moe.fc2_latent_proj.wgrad", L, h_, T, 1, gemm_dtype_), saved_input(T * L))));
    });
  bw.push_back(freeing(memory_op("moe.unpermute.bwd", T * k * w * 2 * 2 + T * w * 2), T * k * 4));
  if (exchange) bw.push_back(exchange_op("moe.combine.bwd", true));
  if (etp > 1)
    bw.push_back(collective_op("moe.combine.bwd.allgather", CollectiveKind::AllGather, CommGroup::ExpertTensorParallel,
                               T * k * w * 2 * etp * load));
  // Weight gradients run after their input gradients; with
  // --delay-wgrad-compute (Megatron-Core's combined 1F1B with Transformer
  // Engine's delayed wgrad: TransformerLayerSchedulePlan.run issues the
  // backward dispatch and then mlp.backward_dw) they run beside the backward
  // dispatch, which waits for fc1's input gradient only.
  const bool delay_wgrad = shape_.delay_wgrad_compute && exchange;
  std::vector<OpSpec> wgrads;
  const auto wgrad = [&](OpSpec op) { (delay_wgrad ? wgrads : bw).push_back(std::move(op)); };
  if (fp8_) bw.push_back(memory_op("moe.experts.fc2" + q(".grad_", "cast"), rows * w * cast_bytes()));
  bw.push_back(expert_gemm(matmul("moe.experts.fc2.dgrad", per_expert, fe / etp, w, local_experts, dt)));
  wgrad(weight_grad(freeing(expert_gemm(matmul("moe.experts.fc2.wgrad", fe / etp, w, per_expert, local_experts, dt)),
                            saved_input(rows * fe / etp))));
  bw.push_back(freeing(memory_op(act + ".bwd", 2 * rows * (2 * fc1_out + fe / etp)), 2 * rows * fc1_out));
  if (fp8_) bw.push_back(memory_op("moe.experts.fc1" + q(".grad_", "cast"), rows * fc1_out * cast_bytes()));
  bw.push_back(expert_gemm(matmul("moe.experts.fc1.dgrad", per_expert, w, fc1_out, local_experts, dt)));
  wgrad(weight_grad(freeing(expert_gemm(matmul("moe.experts.fc1.wgrad", w, fc1_out, per_expert, local_experts, dt)),
                            saved_input(rows * w))));
  if (etp > 1)
    bw.push_back(collective_op("moe.dispatch.bwd.reducescatter", CollectiveKind::ReduceScatter,
                               CommGroup::ExpertTensorParallel, T * k * w * 2 * etp * load));
  OpSpec permute_bwd = memory_op("moe.permute.bwd", T * k * w * 2 * 2);
  if (exchange) {
    OpSpec dispatch_bwd = exchange_op("moe.dispatch.bwd", false);
    if (delay_wgrad) {
      // Nothing of the block waits for it but the permutation's backward.
      dispatch_bwd.detached = true;
      if (etp > 1) dispatch_bwd.after = static_cast<int>(bw.size()) - 1;  // the reduce-scatter
      permute_bwd.after = static_cast<int>(bw.size());
    }
    bw.push_back(dispatch_bwd);
  }
  for (OpSpec& op : wgrads) bw.push_back(std::move(op));
  bw.push_back(permute_bwd);
  if (L > 0)
    in_format(kLatent, [&] {
      cast_grad("moe.fc1_latent_proj", T, L, bw);
      bw.push_back(matmul("moe.fc1_latent_proj.dgrad", T, h_, L, 1, gemm_dtype_));
      bw.push_back(
          weight_grad(freeing(matmul("moe.fc1_latent_proj.wgrad", h_, L, T, 1, gemm_dtype_), latent_in_saved)));
    });
  bw.push_back(freeing(memory_op("moe.router.topk.bwd", T * E * 4 * 3, KernelClass::Softmax), T * E * 4));
  bw.push_back(matmul("moe.router.dgrad", T, h_, E));
  bw.push_back(weight_grad(freeing(matmul("moe.router.wgrad", h_, E, T), 2 * T * h_)));
  backward(std::move(bw));

  // Recomputing "shared_experts" checkpoints the shared experts' MLP: its
  // input (FC1's, the norm's output) stays; "layernorm" drops that one.
  std::size_t shared_fc1 = begin;  // none: the router, which keeps its input too
  if (m_.moe_shared_expert_intermediate_size > 0) {
    const std::size_t shared = fw_.size();
    dense_mlp("moe.shared", static_cast<double>(m_.moe_shared_expert_intermediate_size), false);
    rerun_from(shared, strategy::kRecomputeSharedExperts);
    shared_fc1 = forward_index("moe.shared.fc1", shared);
    for (std::size_t i = shared; i < fw_.size(); ++i)
      if (i != shared_fc1) drop(i, strategy::kRecomputeSharedExperts, static_cast<double>(fw_[i].saved_bytes));
    drop(shared_fc1, strategy::kRecomputeLayernorm, static_cast<double>(fw_[shared_fc1].saved_bytes));
  }
  rerun_from(begin, strategy::kRecomputeMoe);
  for (std::size_t i = begin + 1; i < fw_.size(); ++i)
    if (i != shared_fc1) drop(i, strategy::kRecomputeMoe, static_cast<double>(fw_[i].saved_bytes));

  // CUDA-graph regions (moe_layer.py at d98e8a64dd): the router and the
  // shared experts, which ptsim never overlaps with the exchange, run in
  // route() and shared_experts_compute() (moe_router); the latent down
  // projection, the split counts and, for the all-to-all and all-gather
  // dispatchers, the permutation in preprocess() (moe_preprocess: flex
  // permutes inside its exchange); the rest in the layer (moe).
  const bool permute_in_preprocess = dispatcher != strategy::MoeDispatcher::Flex;
  tag_graph_regions(begin, groups, strategy::kGraphMoe, [&](const std::string& name) -> std::uint8_t {
    if (name.starts_with("moe.router") || name.starts_with("moe.shared")) return strategy::kGraphMoeRouter;
    if (name.starts_with("moe.fc1_latent_proj") || name.starts_with("moe.dispatch.counts") ||
        (permute_in_preprocess && name.starts_with("moe.permute")))
      return strategy::kGraphMoePreprocess;
    return 0;
  });
}

}  // namespace ptsim::workload::internal

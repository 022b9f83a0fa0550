// Parameters one rank holds, and the static memory they cost: what sits in
// HBM before the first micro-batch starts. Mixed-precision Adam as the ZeRO
// paper counts it (Rajbhandari et al. 2020 §3.1, §5): bf16 weights (2 bytes),
// gradients (G bytes) and fp32 master weights, momentum and variance (12) per
// parameter; ZeRO stage 1 shards the 12 over the N_d ranks that reduce the
// parameter's gradient, stage 2 the gradients too, stage 3 the weights too:
//   stage 0: (14 + G)Ψ · 1: (2 + G)Ψ + 12Ψ/N_d · 2: 2Ψ + (12 + G)Ψ/N_d · 3: (14 + G)Ψ/N_d.
// G = 2 is the ZeRO paper's fp16 gradient; Megatron-LM keeps bf16 training's
// gradients in fp32, G = 4: "bf16 param, fp32 grads: 18 bytes, distributed
// optimizer 6 + 12/d" (Megatron-LM docs/source/distrib_optimizer.md).
#pragma once

#include <cstdint>
#include <vector>

#include "ptsim/model/model_spec.hpp"
#include "ptsim/strategy/parallel_config.hpp"

namespace ptsim::workload {

/// A rank's parameters of one part of the model, split by the group that
/// reduces their gradients: dense ones over data and context parallelism,
/// expert ones over expert data parallelism.
struct RankParameters {
  std::int64_t dense = 0;
  std::int64_t expert = 0;
  std::int64_t total() const { return dense + expert; }
  RankParameters& operator+=(const RankParameters& o) {
    dense += o.dense;
    expert += o.expert;
    return *this;
  }
};

/// Transformer layer `layer` on one rank: column- and row-parallel matrices
/// and column-parallel biases split t ways; norms, row-parallel biases, the
/// MoE router and MLA's low-rank down-projections replicated; each rank holds
/// experts/ep experts, each split expert_tp ways.
RankParameters layer_parameters_per_rank(const model::ModelSpec& m, const strategy::ParallelConfig& c,
                                         std::int64_t layer);

/// layer_parameter_tensors grouped by the module that holds them, in the
/// order a forward runs the modules (norm; QKV with its bias and per-head
/// q/k norms; output projection; norm; fc1; fc2; post-sublayer norms where
/// the model has them): what DeepSpeed's ZeRO-3 fetches and releases
/// together, one module's hook at a time.
std::vector<std::vector<std::int64_t>> layer_parameter_modules(const model::ModelSpec& m,
                                                               const strategy::ParallelConfig& c, std::int64_t layer);

/// The parameter tensors of dense transformer layer `layer` on one rank, in
/// module order (norm, attention projections, norm, MLP; each weight then its
/// bias): how a framework that handles parameters one tensor at a time sees
/// them. They sum to layer_parameters_per_rank(m, c, layer).dense. Throws
/// ConfigError for MoE layers and multi-latent attention.
std::vector<std::int64_t> layer_parameter_tensors(const model::ModelSpec& m, const strategy::ParallelConfig& c,
                                                  std::int64_t layer);

/// A 2-D weight as one rank holds it, in Megatron's [out, in] layout: what
/// Muon orthogonalizes (every 2-D parameter but the embeddings and the output
/// layer: emerging_optimizers.py _is_nonlinear_or_embedding).
struct WeightMatrix {
  std::int64_t rows = 0, cols = 0;  // the rank's shard
  /// The dimension tensor parallelism splits, 0 (rows: column-parallel) or 1
  /// (columns: row-parallel), -1 for a weight every TP rank holds whole; and
  /// over how many ranks (tp, or expert_tp for a routed expert's).
  int split_dim = -1;
  std::int64_t split = 1;
  bool expert = false;     // a routed expert's: reduced over expert data parallelism
  std::int64_t count = 1;  // identical weights (the rank's local experts)
  double elements() const { return static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(count); }
};

/// The elements of `weights`, split as their gradients are reduced: a routed
/// expert's over expert data parallelism, the others' over data parallelism.
RankParameters weight_elements(const std::vector<WeightMatrix>& weights);

/// The weights of transformer layer `layer` on one rank, as Megatron-Core's
/// Muon sees them: attention's query, key and value weights apart (its
/// default muon_split_qkv) or multi-latent attention's down and up
/// projections, the output projection, a dense MLP's fc1 (gate and up in one
/// weight) and fc2, or the router, each local expert's fc1 and fc2 and the
/// shared experts'. Their elements are layer_parameters_per_rank's but for
/// norms and biases.
std::vector<WeightMatrix> layer_weight_matrices(const model::ModelSpec& m, const strategy::ParallelConfig& c,
                                                std::int64_t layer);
/// The same for one multi-token-prediction depth: its transformer layer's
/// and its column-parallel 2h → h projection.
std::vector<WeightMatrix> mtp_depth_weight_matrices(const model::ModelSpec& m, const strategy::ParallelConfig& c);

/// Parameters of transformer layer `layer` that every rank of a TP group
/// holds whole, but whose gradients differ between those ranks, so that
/// Megatron-Core all-reduces them over TP once a step
/// (finalize_model_grads.py, _allreduce_non_tensor_model_parallel_grads):
/// under sequence parallelism each rank trains them on its own tokens — the
/// norms, the biases added after a row-parallel reduction, the MoE router,
/// and multi-latent attention's down projections (Transformer Engine Linear
/// in 'duplicated' mode, run on the rank's shard) with their norms; with or
/// without it, qk_layernorm's query and key norms. 0 at TP 1.
std::int64_t layer_tp_replicated_parameters(const model::ModelSpec& m, const strategy::ParallelConfig& c,
                                            std::int64_t layer);
/// The same for the output layer: its final norm, under SP at TP > 1.
std::int64_t output_tp_replicated_parameters(const model::ModelSpec& m, const strategy::ParallelConfig& c);

/// Word embedding slice (V/t rows) plus replicated learned positions.
std::int64_t embedding_parameters_per_rank(const model::ModelSpec& m, std::int64_t tp);

/// Final norm plus the LM head slice. A tied head still needs its own copy
/// when the embedding lives on another rank (`separate_head`).
std::int64_t output_parameters_per_rank(const model::ModelSpec& m, std::int64_t tp, bool separate_head);

/// The multi-token-prediction depths on the last stage: each one's
/// transformer layer (built as the model's last), its column-parallel 2h → h
/// projection and three norms; and, where the embedding lives on another
/// rank (`separate_embedding`), the word embedding the depths look tokens up
/// in, which Megatron-Core builds on the last stage too and keeps in step
/// with the first stage's (the embedding group).
RankParameters mtp_parameters_per_rank(const model::ModelSpec& m, const strategy::ParallelConfig& c,
                                       bool separate_embedding);

struct StaticMemory {
  std::int64_t parameters = 0;
  std::uint64_t params_bytes = 0;     // bf16 weights (ZeRO-3: the rank's shard)
  std::uint64_t grads_bytes = 0;      // gradients, 2 or 4 bytes each (ZeRO-2/3: the rank's shard)
  std::uint64_t optimizer_bytes = 0;  // fp32 master weights and Adam moments (ZeRO ≥ 1: the shard)
  std::uint64_t total_bytes() const { return params_bytes + grads_bytes + optimizer_bytes; }
};

/// Static memory of `parameters` whose gradients `group` ranks reduce, under
/// ZeRO `stage`, with gradients of `gradient_bytes` (4: fp32, Megatron's bf16 default; 2: bf16).
/// `fp32_shards` (FSDP2 with bf16 mixed precision): the fp32 shard is the only
/// copy of a parameter — no bf16 one beside it — and its gradient shard is
/// fp32 whatever the reduction type (FSDP casts the reduced gradient to the
/// parameter's type): 4 + 4 + 8 (Adam's moments) = 16 bytes a parameter.
/// `optimizer_group` (0: `group`): the ranks the optimizer states are split
/// over where more than the gradients' (Megatron-FSDP's Hybrid-FSDP).
/// `state_bytes`: AdamW's state a parameter, 12 (fp32 master weight and
/// moments) unless the precision-aware optimizer narrows it
/// (strategy::ParallelConfig::adam_state_bytes).
StaticMemory static_memory(std::int64_t parameters, int zero_stage = 0, std::int64_t group = 1, int gradient_bytes = 4,
                           bool fp32_shards = false, std::int64_t optimizer_group = 0, int state_bytes = 12);

}  // namespace ptsim::workload

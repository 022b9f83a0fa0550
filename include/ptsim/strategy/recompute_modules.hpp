// Megatron-Core's selective recomputation by module
// (TransformerConfig.recompute_modules with recompute_granularity
// 'selective', at d98e8a64dd): which parts of a layer drop what they keep
// for the backward pass and run again there. A set of them is a bit mask.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptsim::strategy {

using RecomputeModules = std::uint16_t;

/// One bit per module Megatron-Core accepts and ptsim's layers have.
/// Output-discarding ones (CheckpointWithoutOutput) keep their inputs and
/// free their outputs once consumed: layernorm, moe_act, mla_up_proj, mhc. The
/// others are normal checkpoints that keep only their input: core_attn, mlp,
/// moe, shared_experts.
enum RecomputeModule : RecomputeModules {
  kRecomputeCoreAttn = 1u << 0,       // core attention (the fused kernel, or scores to context)
  kRecomputeMoeAct = 1u << 1,         // the experts' activation function
  kRecomputeLayernorm = 1u << 2,      // input and pre-MLP norms that are not fused into a linear
  kRecomputeMlaUpProj = 1u << 3,      // MLA's up projections and RoPE
  kRecomputeMlp = 1u << 4,            // a dense layer's MLP
  kRecomputeMoe = 1u << 5,            // the whole MoE layer, exchanges included
  kRecomputeSharedExperts = 1u << 6,  // an MoE layer's shared experts
  kRecomputeMhc = 1u << 7,            // hyper-connections' aggregate and residual mix (their outputs)
};

/// Megatron-Core's default recompute_modules: ["core_attn"].
inline constexpr RecomputeModules kDefaultRecomputeModules = kRecomputeCoreAttn;

/// The module of Megatron-Core's name ("core_attn", "moe_act", ...); 0 for a
/// name it does not know or ptsim does not model (see recompute_module_names()).
RecomputeModule recompute_module_named(std::string_view name);
/// "core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts, mhc".
std::string recompute_module_names();
/// A set as Megatron-Core's names, in the order above; empty when the set is.
std::vector<std::string> names_of_modules(RecomputeModules modules);

}  // namespace ptsim::strategy

// Muon's update of a stage's weights, as Megatron-Core runs it over
// NVIDIA-NeMo/Emerging-Optimizers: momentum, Newton-Schulz orthogonalization
// in bf16 GEMMs, the weight update; on the rank that updates the most under
// the layer-wise distributed optimizer. Private to workload/.
#pragma once

#include <cstdint>
#include <vector>

#include "internal/muon_update.hpp"
#include "internal/program_builder.hpp"
#include "internal/stage_program.hpp"

namespace ptsim::workload::internal {

/// Emits the Muon update of ctx.weight_matrices on this stage (after the
/// gradients are reduced): AdamW over the rank's other parameters,
/// `adam_parameters`, then each updated weight's ops, then the copy of the
/// updated fp32 weights into the bf16 parameters.
void build_muon_step(const StageContext& ctx, ProgramBuilder& out, std::int64_t adam_parameters);

}  // namespace ptsim::workload::internal

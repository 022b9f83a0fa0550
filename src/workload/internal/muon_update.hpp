// What Muon does to one rank's weights: which weights a rank updates under
// the layer-wise distributed optimizer, and the ops of one weight's update.
// Pure functions of the weights' shapes (workload/muon_step.cpp emits them).
// Private to workload/ (and its tests).
#pragma once

#include <cstdint>
#include <vector>

#include "ptsim/workload/op_spec.hpp"
#include "ptsim/workload/stage_parameters.hpp"

namespace ptsim::workload::internal {

/// The weights one rank updates: all of `weights` (every rank updates
/// every weight it holds), or under the layer-wise distributed optimizer
/// the busiest rank's share of each reduction group (`dense_group` ranks for
/// the dense weights, `expert_group` for the experts'): weights dealt to
/// ranks largest Newton-Schulz cost first, each to the least loaded rank, the
/// cost of an m × n weight m·n·min(m, n) as Megatron-Core's
/// LayerWiseDistributedOptimizer weighs it (_ns_compute_cost). Counts of the
/// returned weights are their copies on that rank.
std::vector<WeightMatrix> muon_updated_weights(const std::vector<WeightMatrix>& weights, bool layer_wise,
                                               std::int64_t dense_group, std::int64_t expert_group);

/// The ops of one Muon update of `w` (one copy): decoupled weight decay,
/// the momentum and Nesterov lerps, under --muon-tp-mode duplicated for a
/// TP-split weight the all-gather of its fp32 shards, the Frobenius
/// normalization and bf16 cast, `steps` Newton-Schulz iterations of three
/// GEMMs on the m × n weight (m ≤ n: X·Xᵀ, A·A, B·X), the fp32 cast, the
/// scale and the update of the fp32 master weight.
std::vector<OpSpec> muon_update_ops(const WeightMatrix& w, std::int64_t steps, bool duplicated);

}  // namespace ptsim::workload::internal

// Muon's update of a stage's weights (see internal/muon_step.hpp).
#include "internal/muon_step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <string>
#include <tuple>
#include <utility>

#include "internal/step_end.hpp"
#include "ptsim/workload/boundary_ops.hpp"
#include "ptsim/workload/step_workload.hpp"

namespace ptsim::workload::internal {

namespace {

using taskgraph::CollectiveKind;
using taskgraph::KernelClass;

double ns_cost(const WeightMatrix& w) {
  const auto r = static_cast<double>(w.rows), c = static_cast<double>(w.cols);
  return r * c * std::min(r, c);
}

// Weights with the same shape and split, one entry each, their counts summed.
std::vector<WeightMatrix> merged(const std::vector<WeightMatrix>& weights) {
  std::map<std::tuple<std::int64_t, std::int64_t, int, std::int64_t, bool>, std::int64_t> counts;
  for (const WeightMatrix& w : weights) counts[{w.rows, w.cols, w.split_dim, w.split, w.expert}] += w.count;
  std::vector<WeightMatrix> out;
  for (const auto& [key, count] : counts) {
    const auto& [rows, cols, split_dim, split, expert] = key;
    out.push_back({rows, cols, split_dim, split, expert, count});
  }
  return out;
}

// The busiest of `ranks` ranks' weights when `weights` (one group's) are
// dealt largest cost first, each to the least loaded rank.
std::vector<WeightMatrix> busiest_share(std::vector<WeightMatrix> weights, std::int64_t ranks) {
  if (ranks <= 1 || weights.empty()) return weights;
  std::vector<WeightMatrix> one;  // a copy per entry, largest first
  for (const WeightMatrix& w : weights)
    for (std::int64_t i = 0; i < w.count; ++i) one.push_back({w.rows, w.cols, w.split_dim, w.split, w.expert, 1});
  std::stable_sort(one.begin(), one.end(),
                   [](const WeightMatrix& a, const WeightMatrix& b) { return ns_cost(a) > ns_cost(b); });
  // Only as many ranks as weights can receive one.
  const auto used = static_cast<std::size_t>(std::min<std::int64_t>(ranks, static_cast<std::int64_t>(one.size())));
  using Load = std::pair<double, std::size_t>;  // (cost so far, rank)
  std::priority_queue<Load, std::vector<Load>, std::greater<>> least;
  for (std::size_t r = 0; r < used; ++r) least.push({0.0, r});
  std::vector<std::vector<WeightMatrix>> dealt(used);
  std::vector<double> load(used, 0.0);
  for (const WeightMatrix& w : one) {
    const auto [cost, rank] = least.top();
    least.pop();
    dealt[rank].push_back(w);
    load[rank] = cost + ns_cost(w);
    least.push({load[rank], rank});
  }
  const auto busiest = static_cast<std::size_t>(std::max_element(load.begin(), load.end()) - load.begin());
  return merged(dealt[busiest]);
}

}  // namespace

std::vector<WeightMatrix> muon_updated_weights(const std::vector<WeightMatrix>& weights, bool layer_wise,
                                               std::int64_t dense_group, std::int64_t expert_group) {
  if (!layer_wise) return merged(weights);
  std::vector<WeightMatrix> dense, expert;
  for (const WeightMatrix& w : weights) (w.expert ? expert : dense).push_back(w);
  std::vector<WeightMatrix> out = busiest_share(dense, dense_group);
  const auto experts = busiest_share(expert, expert_group);
  out.insert(out.end(), experts.begin(), experts.end());
  return out;
}

std::vector<OpSpec> muon_update_ops(const WeightMatrix& w, std::int64_t steps, bool duplicated) {
  const double e = static_cast<double>(w.rows) * static_cast<double>(w.cols);  // the shard
  // Under --muon-tp-mode duplicated a split weight is gathered whole and
  // every rank of its TP group iterates on all of it (newton_schulz_tp).
  const bool gathered = duplicated && w.split > 1;
  const std::int64_t rows = gathered && w.split_dim == 0 ? w.rows * w.split : w.rows;
  const std::int64_t cols = gathered && w.split_dim == 1 ? w.cols * w.split : w.cols;
  const double whole = static_cast<double>(rows) * static_cast<double>(cols);
  const auto op = [](const char* name, double bytes) { return memory_op(name, bytes, KernelClass::Optimizer); };
  // OrthogonalizedOptimizer.step, per weight, bytes read + written an element
  // (fp32 master weight, gradient and momentum): p.mul_(1 − lr·wd) 4 + 4;
  // momentum.lerp_(grad) 8 + 4; grad.lerp(momentum), Nesterov, 8 + 4.
  std::vector<OpSpec> ops = {op("muon.weight_decay", 8 * e), op("muon.momentum", 12 * e), op("muon.nesterov", 12 * e)};
  if (gathered)
    ops.push_back(collective_op("muon.tp_allgather", CollectiveKind::AllGather,
                                w.expert ? CommGroup::ExpertTensorParallel : CommGroup::TensorParallel, 4 * whole));
  // newton_schulz: F.normalize (the norm 4, the division 4 + 4), X.to(bf16)
  // 4 + 2 (fp32 matmul precision "medium": the iteration in bf16 GEMMs).
  ops.push_back(op("muon.normalize", 12 * whole));
  ops.push_back(op("muon.to_bf16", 6 * whole));
  // newton_schulz_step, quintic: A = X·Xᵀ; B = b·A + c·A·A (addmm);
  // X = a·X + B·X (addmm), on the transpose when there are more rows.
  const double m = static_cast<double>(std::min(rows, cols)), n = static_cast<double>(std::max(rows, cols));
  for (std::int64_t s = 0; s < steps; ++s) {
    ops.push_back(matmul("muon.ns.gram", m, m, n));
    ops.push_back(matmul("muon.ns.square", m, m, m));
    ops.push_back(matmul("muon.ns.update", m, n, m));
  }
  // X.to(fp32) 2 + 4 (of the whole), the spectral scale of the shard 4 + 4,
  // p.add_(update) 8 + 4.
  ops.push_back(op("muon.to_fp32", 6 * whole));
  ops.push_back(op("muon.scale", 8 * e));
  ops.push_back(op("muon.update", 12 * e));
  return ops;
}

void build_muon_step(const StageContext& ctx, ProgramBuilder& out, std::int64_t adam_parameters) {
  const strategy::ParallelConfig& c = *ctx.config;
  // Megatron-Core's scalar optimizer: AdamW over embeddings, the output
  // layer, norms and biases (muon_scalar_optimizer adam).
  if (adam_parameters > 0)
    emit_step_end_ops(out, fmt::format("optimizer.adam.{}", adam_parameters),
                      {optimizer_step_op(adam_parameters, c.gradient_bytes(), 2)});
  const bool duplicated = c.muon_tp_mode == strategy::MuonTpMode::Duplicated;
  double updated = 0;
  for (const WeightMatrix& w :
       muon_updated_weights(ctx.weight_matrices, c.muon_layer_wise, ctx.dense_group, ctx.expert_group)) {
    const std::vector<OpSpec> one = muon_update_ops(w, c.muon_ns_steps, duplicated);
    std::vector<OpSpec> ops;
    for (std::int64_t i = 0; i < w.count; ++i) ops.insert(ops.end(), one.begin(), one.end());
    emit_step_end_ops(out, fmt::format("optimizer.muon.{}x{}.{}.{}.{}", w.rows, w.cols, w.split_dim, w.split, w.count),
                      ops);
    updated += w.elements();
  }
  // Float16OptimizerWithFloat16Params copies the updated fp32 weights into
  // the bf16 parameters, read 4 + write 2 (one multi-tensor kernel).
  if (updated > 0)
    emit_step_end_ops(out, fmt::format("optimizer.muon.copy.{}", updated),
                      {memory_op("muon.copy_to_model", 6 * updated, KernelClass::Optimizer)});
}

}  // namespace ptsim::workload::internal

// Fitting a profile's network to nccl-tests logs (see fit_collectives.hpp).
#include "ptsim/fit/fit_collectives.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "internal/fit_core.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/cost/collective_algorithms.hpp"
#include "ptsim/cost/isolated_collective.hpp"

namespace ptsim::fit {

taskgraph::CollectiveKind collective_kind(const std::string& op) {
  using K = taskgraph::CollectiveKind;
  if (op == "all_reduce") return K::AllReduce;
  if (op == "all_gather") return K::AllGather;
  if (op == "reduce_scatter") return K::ReduceScatter;
  if (op == "all_to_all") return K::AllToAll;
  if (op == "broadcast") return K::Broadcast;
  if (op == "reduce") return K::Reduce;
  PTSIM_ASSERT(op == "send_recv", "a collective of config::nccl_tests_ops()");
  return K::PointToPoint;
}

void check_log_on_profile(const config::NcclTestsLog& log, const hardware::HardwareProfile& profile) {
  if (log.ranks < 2) throw ConfigError(fmt::format("{}: one rank communicates with nobody", log.file));
  // nccl-tests fills nodes in order, as ptsim's ranks do: the log's nodes
  // must hold as many GPUs as the profile's (a log that does not list its
  // ranks is taken to fill them).
  if (log.nodes > 1 && (log.ranks % log.nodes != 0 || log.ranks / log.nodes != profile.gpus_per_node))
    throw ConfigError(fmt::format("{}: {} ranks on {} nodes, but the profile {} has {} GPUs per node; give a "
                                  "profile of the machines the log ran on",
                                  log.file, log.ranks, log.nodes, profile.name, profile.gpus_per_node));
  if (log.nodes == 1 && log.ranks > profile.gpus_per_node)
    throw ConfigError(fmt::format("{}: {} ranks on one node, but the profile {} has {} GPUs per node", log.file,
                                  log.ranks, profile.name, profile.gpus_per_node));
}

namespace {

struct Point {
  const config::NcclTestsLog* log;
  const config::NcclTestsPoint* row;
  taskgraph::CollectiveKind kind;
};

// The predicted time and the algorithm NCCL would pick.
std::pair<double, std::string> predict(const hardware::HardwareProfile& hw, const Point& p) {
  const cost::TransferPlan plan = *cost::isolated_collective(hw, p.kind, p.log->ranks, p.row->bytes);
  return {plan.estimated_s, fmt::format("{}/{}", cost::to_string(plan.algorithm), cost::to_string(plan.protocol))};
}

}  // namespace

CollectiveFitResult fit_collectives(const std::vector<config::NcclTestsLog>& logs,
                                    const hardware::HardwareProfile& profile, const CollectiveFitOptions& options,
                                    const FitProgress& progress) {
  CollectiveFitResult out;
  std::vector<Point> points;
  internal::Measurements m;
  const auto reach = [&](Reach r) {
    if (std::find(m.reached.begin(), m.reached.end(), r) == m.reached.end()) m.reached.push_back(r);
  };
  for (const auto& log : logs) {
    check_log_on_profile(log, profile);
    const auto kind = collective_kind(log.op);
    const bool crosses = log.ranks > profile.nvlink.domain_gpus;
    reach(crosses ? Reach::NetworkTier : Reach::NvlinkTier);
    if (crosses && profile.gpus_per_node > 1) reach(Reach::NvlinkTier);  // the ranks of a node talk over NVLink too
    // NVLS inside a domain; NVLSTree across domains of more than one GPU.
    if (kind == taskgraph::CollectiveKind::AllReduce && profile.nvlink.nvls_efficiency &&
        (!crosses || profile.nvlink.domain_gpus > 1))
      reach(Reach::NvlsTier);
    const std::string name = std::filesystem::path(log.file).filename().string();
    for (const auto& row : log.points) {
      points.push_back({&log, &row, kind});
      m.labels.push_back(fmt::format("{}:{} ({} {} ranks, {} B)", name, row.line, log.op, log.ranks, row.bytes));
    }
  }
  if (points.empty()) throw ConfigError("ptsim fit: the logs hold no measurements");
  m.log_errors = [&](const hardware::HardwareProfile& hw) {
    Vector e;
    for (const auto& p : points) e.push_back(std::log(predict(hw, p).first / p.row->time_s));
    ++out.evaluations;
    return e;
  };
  internal::CoreResult core = internal::fit_parameters(
      profile, m, options.parameters, true, {options.min_sensitivity, options.min_independence}, progress);
  out.fitted = core.fitted;
  auto& rec = out.record;
  rec.method = "nccl-tests";
  for (const auto& log : logs) rec.inputs.push_back(log.file);
  rec.points = m.labels;
  rec.parameters = core.parameters;
  rec.refused = core.refused;
  for (const auto& p : points) {
    const auto [before, before_algorithm] = predict(profile, p);
    const auto [after, after_algorithm] = predict(out.fitted, p);
    const double factor = cost::bus_bandwidth_factor(p.kind, static_cast<double>(p.log->ranks));
    const double bytes = static_cast<double>(p.row->bytes);
    out.rows.push_back({p.log->file, p.log->op, p.log->ranks, p.row->bytes, p.row->time_s, before, after,
                        p.row->busbw_GBps, bytes / before / 1e9 * factor, bytes / after / 1e9 * factor,
                        before_algorithm, after_algorithm});
  }
  internal::record_errors(rec, core.before, core.after);
  return out;
}

}  // namespace ptsim::fit

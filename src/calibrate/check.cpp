// Predicted against measured, kernel by kernel (see check.hpp).
#include "ptsim/calibrate/check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "internal/kernel_task.hpp"
#include "ptsim/calibrate/fit.hpp"
#include "ptsim/cost/collective_algorithms.hpp"
#include "ptsim/cost/compute_cost.hpp"
#include "ptsim/hardware/cluster.hpp"

namespace ptsim::calibrate {

namespace {

std::string shape_text(const hardware::KernelMeasurement& k) {
  const auto v = [&](const char* name) { return static_cast<std::uint64_t>(std::llround(k.shape.at(name))); };
  if (k.op == "gemm")
    return v("batch") > 1 ? fmt::format("{}×{}×{} ×{}", v("m"), v("n"), v("k"), v("batch"))
                          : fmt::format("{}×{}×{}", v("m"), v("n"), v("k"));
  if (k.op == "attention")
    return fmt::format("bh {} s {} d {}{}{}", v("batch_heads"), v("seq_q"), v("head_dim"),
                       v("causal") ? " causal" : "", v("backward") ? " bwd" : " fwd");
  if (k.shape.contains("ranks"))
    return fmt::format("{} ranks {:.1f} MB", v("ranks"), k.bytes / 1e6);
  return fmt::format("{:.1f} MB", k.bytes / 1e6);
}

std::optional<taskgraph::CollectiveKind> collective(const std::string& op) {
  if (op == "all_reduce") return taskgraph::CollectiveKind::AllReduce;
  if (op == "all_gather") return taskgraph::CollectiveKind::AllGather;
  if (op == "reduce_scatter") return taskgraph::CollectiveKind::ReduceScatter;
  return std::nullopt;
}

}  // namespace

std::optional<double> predict(const hardware::KernelMeasurement& k, const hardware::HardwareProfile& hw,
                              cost::Load load) {
  if (const auto kind = collective(k.op)) {
    const auto n = static_cast<std::int64_t>(std::llround(k.shape.at("ranks")));
    if (n < 2) return std::nullopt;
    const hardware::Cluster cluster(hw, n);
    std::vector<Rank> members(static_cast<std::size_t>(n));
    std::iota(members.begin(), members.end(), 0);
    return cost::choose_plan(*kind, static_cast<std::uint64_t>(k.bytes), members, cluster, cost::LatencyModel(hw))
        .estimated_s;
  }
  if (k.op != "gemm" && k.op != "attention" && !internal::memory_class(k.op)) return std::nullopt;
  const taskgraph::Task task = internal::kernel_task(k);
  if (k.op != "attention" && !hw.gpu.peak_flops_per_s[static_cast<std::size_t>(task.dtype)]) return std::nullopt;
  return cost::compute_seconds(hw, task, load);
}

CheckReport check(const hardware::MeasurementSet& m, const hardware::HardwareProfile& hw, bool all) {
  // The half a calibrated profile was fitted on, split as its fit split it.
  const std::vector<bool> fitted =
      calibration_split(m, hw.calibration ? hw.calibration->gemm_fit : hardware::GemmFit::Grid);
  // Measurements taken after seconds of continuous load are predicted at
  // the profile's sustained rates; short ones at its burst rates.
  const cost::Load load = m.sustain_s > 0 ? cost::Load::Sustained : cost::Load::Burst;
  CheckReport report;
  for (std::size_t i = 0; i < m.kernels.size(); ++i) {
    const auto& k = m.kernels[i];
    if (fitted[i] && !all) {
      ++report.skipped_fitted;
      continue;
    }
    const auto predicted = k.verified ? predict(k, hw, load) : std::nullopt;
    if (!predicted) {
      ++report.skipped;
      if (!k.verified) ++report.skipped_unverified;
      continue;
    }
    report.kernels.push_back({i, k.op, k.dtype, shape_text(k), k.time_s, *predicted,
                              (*predicted - k.time_s) / k.time_s * 100});
  }
  std::stable_sort(report.kernels.begin(), report.kernels.end(), [](const KernelCheck& a, const KernelCheck& b) {
    return std::abs(a.error_pct) > std::abs(b.error_pct);
  });
  auto& s = report.summary;
  s.count = report.kernels.size();
  if (s.count > 0) {
    std::vector<double> errors;
    for (const auto& c : report.kernels) errors.push_back(std::abs(c.error_pct));
    std::sort(errors.begin(), errors.end());
    const std::size_t n = errors.size();
    s.median_abs_error_pct = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
    s.mean_abs_error_pct = std::accumulate(errors.begin(), errors.end(), 0.0) / static_cast<double>(n);
    s.max_abs_error_pct = errors.back();
  }
  return report;
}

}  // namespace ptsim::calibrate

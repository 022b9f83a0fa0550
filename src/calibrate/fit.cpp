// Fitting the compute model to measurements (see fit.hpp).
#include "ptsim/calibrate/fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "internal/kernel_task.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/cost/compute_cost.hpp"
#include "ptsim/cost/gemm_model.hpp"

namespace ptsim::calibrate {

namespace {

using hardware::KernelMeasurement;

double dim(const KernelMeasurement& k, const char* name) { return k.shape.at(name); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::size_t index_of(const std::vector<double>& sorted, double v) {
  return static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin());
}

}  // namespace

std::vector<bool> calibration_split(const hardware::MeasurementSet& m, hardware::GemmFit gemm_fit) {
  std::vector<bool> fit(m.kernels.size(), false);
  const bool scattered = gemm_fit == hardware::GemmFit::Scalar;
  // GEMMs: the sub-grid of every other measured m, n and k, per dtype.
  std::map<std::string, std::array<std::vector<double>, 3>> axes;
  for (const auto& k : m.kernels)
    if (k.op == "gemm" && dim(k, "batch") == 1) {
      auto& a = axes[k.dtype];
      a[0].push_back(dim(k, "m"));
      a[1].push_back(dim(k, "n"));
      a[2].push_back(dim(k, "k"));
    }
  for (auto& [dtype, a] : axes)
    for (auto& axis : a) {
      std::sort(axis.begin(), axis.end());
      axis.erase(std::unique(axis.begin(), axis.end()), axis.end());
    }
  // Everything else: sorted by size within its kind, every other one.
  std::map<std::string, std::vector<std::pair<double, std::size_t>>> by_kind;
  for (std::size_t i = 0; i < m.kernels.size(); ++i) {
    const auto& k = m.kernels[i];
    if (k.op == "gemm") {
      if (dim(k, "batch") != 1) continue;
      if (scattered) {
        by_kind["gemm." + k.dtype].emplace_back(k.flops, i);
        continue;
      }
      const auto& a = axes[k.dtype];
      fit[i] = index_of(a[0], dim(k, "m")) % 2 == 0 && index_of(a[1], dim(k, "n")) % 2 == 0 &&
               index_of(a[2], dim(k, "k")) % 2 == 0;
    } else if (k.op == "attention") {
      by_kind[k.op + (dim(k, "backward") != 0 ? ".backward" : ".forward")].emplace_back(k.flops, i);
    } else if (internal::memory_class(k.op)) {
      by_kind[k.op].emplace_back(k.bytes, i);
    }
  }
  for (auto& [kind, list] : by_kind) {
    std::stable_sort(list.begin(), list.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t r = 0; r < list.size(); r += 2) fit[list[r].second] = true;
  }
  return fit;
}

hardware::Calibration fit(const hardware::MeasurementSet& m, const hardware::HardwareProfile& profile,
                          FitOptions options) {
  hardware::HardwareProfile base = profile;
  base.calibration.reset();  // fit against the datasheet model
  const hardware::GemmFit gemm_fit = options.gemm_scalar ? hardware::GemmFit::Scalar : hardware::GemmFit::Grid;
  const std::vector<bool> use = calibration_split(m, gemm_fit);
  hardware::Calibration c;
  c.gemm_fit = gemm_fit;
  c.measurements = m.file;
  c.device = m.device;
  c.date = m.date;
  c.sustain_s = m.sustain_s;

  // Memory-bound kernels: t = L + bytes · β per class.
  std::map<std::string, std::vector<std::pair<double, double>>> memory;  // class → (bytes, time)
  for (std::size_t i = 0; i < m.kernels.size(); ++i) {
    const auto& k = m.kernels[i];
    if (use[i] && k.verified && internal::memory_class(k.op)) memory[k.op].emplace_back(k.bytes, k.time_s);
  }
  std::vector<double> intercepts;
  for (const auto& [op, points] : memory) {
    if (points.size() < 2) continue;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& [x, y] : points) {
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    const double n = static_cast<double>(points.size());
    const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    intercepts.push_back((sy - slope * sx) / n);
  }
  const double launch = intercepts.empty() ? cost::launch_overhead_seconds(base)
                                           : std::max(0.0, median(intercepts));
  if (!intercepts.empty()) c.kernel_launch_overhead_s = launch;
  // Efficiency at each fitted size, after the launch overhead: caches make
  // it depend on the size, so it is kept as a table over log2 bytes.
  for (auto& [op, points] : memory) {
    if (points.size() < 2) continue;
    std::sort(points.begin(), points.end());
    hardware::MemoryTable t;
    for (const auto& [bytes, seconds] : points) {
      const double moving = seconds - launch > 0.1 * seconds ? seconds - launch : seconds;
      const double log2_bytes = std::log2(bytes);
      if (!t.log2_bytes.empty() && log2_bytes == t.log2_bytes.back()) continue;
      t.log2_bytes.push_back(log2_bytes);
      t.efficiency.push_back(bytes / (moving * base.gpu.memory_bandwidth_bytes_per_s));
    }
    c.memory[op] = std::move(t);
  }

  // GEMMs: measured/analytic ratio on the fitted sub-grid, per dtype.
  std::map<std::string, std::map<std::tuple<double, double, double>, double>> ratios;
  std::map<std::string, std::array<std::vector<double>, 4>> scattered;  // ratio, log2 m, n, k
  for (std::size_t i = 0; i < m.kernels.size(); ++i) {
    const auto& k = m.kernels[i];
    if (!use[i] || !k.verified || k.op != "gemm") continue;
    const auto dtype = parse_dtype(k.dtype);
    if (!dtype || !base.gpu.peak_flops_per_s[static_cast<std::size_t>(*dtype)]) continue;
    const double analytic = cost::gemm_analytic_seconds(base.gpu, dim(k, "m"), dim(k, "n"), dim(k, "k"), 1,
                                                        *dtype, k.bytes);
    if (gemm_fit == hardware::GemmFit::Scalar) {
      auto& s = scattered[k.dtype];  // every measurement counts, repeated shapes too
      s[0].push_back(k.time_s / analytic);
      s[1].push_back(std::log2(dim(k, "m")));
      s[2].push_back(std::log2(dim(k, "n")));
      s[3].push_back(std::log2(dim(k, "k")));
    } else {
      ratios[k.dtype][{dim(k, "m"), dim(k, "n"), dim(k, "k")}] = k.time_s / analytic;
    }
  }
  // A grid fit of GEMMs none of which lies on the fitted sub-grid: the shapes
  // are no grid (every other m, n and k value of one measured GEMM at least).
  if (gemm_fit == hardware::GemmFit::Grid)
    for (const auto& k : m.kernels)
      if (k.op == "gemm" && k.verified && dim(k, "batch") == 1 && !ratios.count(k.dtype) &&
          parse_dtype(k.dtype) && base.gpu.peak_flops_per_s[static_cast<std::size_t>(*parse_dtype(k.dtype))])
        throw ConfigError(fmt::format(
            "{}: none of its {} GEMMs lies on the sub-grid of every other measured m, n and k, so they form "
            "no grid to fit; for GEMMs measured at scattered shapes (layers of real models) use --gemm-scalar",
            m.file, k.dtype));
  // Scattered shapes: one ratio per dtype; the axes record the median fitted
  // shape (a one-point table answers every shape with its ratio).
  for (const auto& [dtype, s] : scattered)
    c.gemm[dtype] = {{median(s[1])}, {median(s[2])}, {median(s[3])}, {median(s[0])}};
  for (const auto& [dtype, points] : ratios) {
    std::set<double> ms, ns, ks;
    for (const auto& [mnk, r] : points) {
      ms.insert(std::get<0>(mnk));
      ns.insert(std::get<1>(mnk));
      ks.insert(std::get<2>(mnk));
    }
    hardware::GemmTable t;
    for (const double v : ms) t.log2_m.push_back(std::log2(v));
    for (const double v : ns) t.log2_n.push_back(std::log2(v));
    for (const double v : ks) t.log2_k.push_back(std::log2(v));
    for (const double mv : ms)
      for (const double nv : ns)
        for (const double kv : ks) {
          const auto it = points.find({mv, nv, kv});
          if (it == points.end())
            throw ConfigError(fmt::format(
                "{}: the {} GEMM grid lacks a verified measurement of m = {}, n = {}, k = {}; measure "
                "every combination of the grid's m, n and k values", m.file, dtype, mv, nv, kv));
          t.ratio.push_back(it->second);
        }
    c.gemm[dtype] = std::move(t);
  }

  // Fused attention: median efficiency per direction.
  if (!options.attention) return c;
  std::vector<double> forward, backward;
  for (std::size_t i = 0; i < m.kernels.size(); ++i) {
    const auto& k = m.kernels[i];
    if (!use[i] || !k.verified || k.op != "attention") continue;
    const taskgraph::Task task = internal::kernel_task(k);
    const double executed = cost::attention_executed_flops(task);
    const double seconds = std::max(k.time_s - launch, 1e-12);
    (dim(k, "backward") != 0 ? backward : forward).push_back(executed / (seconds * base.gpu.peak_flops(Dtype::Bf16)));
  }
  if (!forward.empty()) c.attention_forward_efficiency = std::min(1.0, median(forward));
  if (!backward.empty()) c.attention_backward_efficiency = std::min(1.0, median(backward));
  return c;
}

}  // namespace ptsim::calibrate

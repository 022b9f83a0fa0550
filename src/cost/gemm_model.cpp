// Tile/wave-quantized GEMM times and their calibration (see gemm_model.hpp).
#include "ptsim/cost/gemm_model.hpp"

#include <algorithm>
#include <cmath>

#include "internal/interpolate.hpp"

namespace ptsim::cost {

GemmQuantization gemm_quantization(double m, double n, double batch, int sm_count) {
  GemmQuantization q;
  const double tm = std::ceil(m / kGemmTile), tn = std::ceil(n / kGemmTile);
  q.tiles = tm * tn * batch;
  q.waves = std::ceil(q.tiles / sm_count);
  q.tile_efficiency = (m * n) / (tm * kGemmTile * tn * kGemmTile);
  q.wave_efficiency = q.tiles / (q.waves * sm_count);
  return q;
}

namespace {

// The slower of a GEMM's math and its bytes, each at the burst rate times its scale.
double scaled_analytic_seconds(const hardware::GpuSpec& gpu, double m, double n, double k, double batch,
                               Dtype dtype, double bytes, RateScale scale) {
  const double memory = bytes / (gpu.memory_bandwidth_bytes_per_s * gpu.memory_efficiency * scale.memory);
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return memory;  // no math to do
  const GemmQuantization q = gemm_quantization(m, n, batch, gpu.sm_count);
  const double rate = gpu.peak_flops(dtype) * gpu.gemm_efficiency_for(dtype) * q.tile_efficiency *
                      q.wave_efficiency * scale.tensor;
  const double math = 2 * m * n * k * batch / rate;
  return std::max(math, memory);
}

}  // namespace

double gemm_analytic_seconds(const hardware::GpuSpec& gpu, double m, double n, double k,
                             double batch, Dtype dtype, double bytes) {
  return scaled_analytic_seconds(gpu, m, n, k, batch, dtype, bytes, {});
}

double interpolate_ratio(const hardware::GemmTable& t, double m, double n, double k) {
  using internal::locate;
  const auto [im, wm] = locate(t.log2_m, std::log2(m));
  const auto [in, wn] = locate(t.log2_n, std::log2(n));
  const auto [ik, wk] = locate(t.log2_k, std::log2(k));
  const std::size_t nn = t.log2_n.size(), nk = t.log2_k.size();
  const auto at = [&](std::size_t a, std::size_t b, std::size_t c) {
    a = std::min(a, t.log2_m.size() - 1);
    b = std::min(b, nn - 1);
    c = std::min(c, nk - 1);
    return t.ratio[a * nn * nk + b * nk + c];
  };
  double r = 0;
  for (int dm = 0; dm < 2; ++dm)
    for (int dn = 0; dn < 2; ++dn)
      for (int dk = 0; dk < 2; ++dk) {
        const double w = (dm ? wm : 1 - wm) * (dn ? wn : 1 - wn) * (dk ? wk : 1 - wk);
        if (w > 0) r += w * at(im + static_cast<std::size_t>(dm), in + static_cast<std::size_t>(dn),
                               ik + static_cast<std::size_t>(dk));
      }
  return r;
}

double gemm_seconds(const hardware::HardwareProfile& hw, double m, double n, double k, double batch,
                    Dtype dtype, double bytes, Load load) {
  const hardware::GemmTable* table = nullptr;
  if (hw.calibration) {
    const auto it = hw.calibration->gemm.find(std::string(to_string(dtype)));
    if (it != hw.calibration->gemm.end()) table = &it->second;
  }
  const bool sustained_table = table && hw.calibration->sustain_s > 0;
  const RateScale scale = sustained_table ? RateScale{} : rate_scale(hw, dtype, load);
  const double analytic = scaled_analytic_seconds(hw.gpu, m, n, k, batch, dtype, bytes, scale);
  return table ? analytic * interpolate_ratio(*table, m, n, k) : analytic;
}

}  // namespace ptsim::cost

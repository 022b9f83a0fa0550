// The GEMM model. Uncalibrated, a GEMM reaches the dtype's achievable peak
// (gemm_efficiency, the best-shape "MAMF" fraction) scaled by two losses that
// follow from how GEMM kernels tile the output (NVIDIA, "Matrix Multiplication
// Background User's Guide", tile and wave quantization):
//   tile efficiency  = m·n / (⌈m/T⌉·T · ⌈n/T⌉·T)   — partial edge tiles do full work
//   wave efficiency  = tiles / (⌈tiles/SMs⌉ · SMs)  — the last wave leaves SMs idle
// with T = 128 (a 128×128 thread-block tile) and tiles = ⌈m/T⌉·⌈n/T⌉·batch.
// Calibrated, the time is that analytic time times the ratio measured/analytic
// interpolated multilinearly in (log2 m, log2 n, log2 k) over the measured grid
// (clamped at its edges), so it is exact on measured shapes and keeps the
// analytic quantization steps between them.
#pragma once

#include <cstdint>

#include "ptsim/common/dtype.hpp"
#include "ptsim/cost/load.hpp"
#include "ptsim/hardware/hardware_profile.hpp"

namespace ptsim::cost {

inline constexpr double kGemmTile = 128;

struct GemmQuantization {
  double tiles = 0;
  double waves = 0;
  double tile_efficiency = 1;
  double wave_efficiency = 1;
};

GemmQuantization gemm_quantization(double m, double n, double batch, int sm_count);

/// Analytic time of a GEMM without launch overhead: the slower of its math at
/// the quantized achievable rate and its bytes at the achievable bandwidth.
double gemm_analytic_seconds(const hardware::GpuSpec& gpu, double m, double n, double k,
                             double batch, Dtype dtype, double bytes);

/// The measured/analytic ratio at (m, n, k) from a fitted table.
double interpolate_ratio(const hardware::GemmTable& table, double m, double n, double k);

/// GEMM time without launch overhead under `load`: analytic (its math at the
/// sustained tensor fraction, its bytes at the sustained memory fraction),
/// times the calibrated ratio for the dtype when the profile carries one (a
/// calibration measured under sustained load holds the derate already).
double gemm_seconds(const hardware::HardwareProfile& hw, double m, double n, double k, double batch,
                    Dtype dtype, double bytes, Load load);

}  // namespace ptsim::cost

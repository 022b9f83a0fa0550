// Calibration: fitting a profile's compute model to measured kernel times,
// on one half of the measurements, so that the other half checks it.
//   GEMMs      per dtype, on the grid of measured (m, n, k): the sub-grid of
//              every other m, n and k value is fitted (ratio measured/analytic,
//              gemm_model.hpp); all other GEMMs are held out. Or, for GEMMs
//              measured at scattered shapes (the linear layers of real models,
//              FitOptions::gemm_scalar): sorted by FLOPs, every other one is
//              fitted, to one ratio per dtype, the median measured/analytic.
//   memory     per kernel class, sizes sorted, every other one fitted: one launch
//              overhead L (the median of the classes' least-squares intercepts
//              of t = L + bytes · β), then the efficiency bytes / ((t − L) · bandwidth)
//              at each size, interpolated in log2 bytes between them.
//   attention  per direction, every other shape fitted: median efficiency —
//              only when asked (FitOptions::attention): ptsim-microbench times
//              a fused-attention kernel of ours, not FlashAttention or cuDNN,
//              so by default the profile keeps its published efficiencies.
//   others     collectives and host copies are only checked, never fitted.
#pragma once

#include <vector>

#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/hardware/measurement_set.hpp"

namespace ptsim::calibrate {

/// For each kernel of the set: true when calibration fits it, false when it is
/// held out for checking.
std::vector<bool> calibration_split(const hardware::MeasurementSet& m,
                                    hardware::GemmFit gemm_fit = hardware::GemmFit::Grid);

struct FitOptions {
  bool attention = false;    // replace the profile's attention efficiencies by the measured ones
  bool gemm_scalar = false;  // one GEMM ratio per dtype (hardware::GemmFit::Scalar), not a grid table
};

/// Fits `profile`'s (uncalibrated) model to the fitting half of `m`; only
/// verified measurements count. Throws ConfigError when the set is too thin
/// to fit (no complete GEMM sub-grid, fewer than two sizes of a kernel class).
hardware::Calibration fit(const hardware::MeasurementSet& m, const hardware::HardwareProfile& profile,
                          FitOptions options = {});

}  // namespace ptsim::calibrate

// Tensor-core rates under a board power limit (see power_limit.hpp).
#include "ptsim/hardware/power_limit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "ptsim/common/error.hpp"

namespace ptsim::hardware {

namespace {

// Llama 3 8B continued pre-training (LitGPT, bf16, 4 GPUs of one node, 512
// tokens, micro-batch 4) on an H100 SXM with 94 GB HBM2e and a 700 W
// maximum, its board limit set with nvidia-smi --power-limit: tokens/s at
// each cap. Mayr, Wind, Schroeder, Hager, Koestler, Wellein, "AI
// Application Benchmarking: Power-Aware Performance Analysis for Vision and
// Language Models", arXiv:2603.16164, Table 4, row "Pre-training / H100", as
// transcribed in connorlagana/flexcompute-microgrid src/flexcompute/gpu.py
// at 5c8dbb0235be818ec6082ae504d1bb5fcc4ce77a; the run's configuration in
// the authors' RRZE-HPC/hpc-ai-perf-bench at 197fd84d (llm/training).
constexpr std::array<double, 6> kCapW = {200, 300, 400, 500, 600, 700};
constexpr std::array<double, 6> kTokensPerS = {9699.3, 17982.3, 24853.4, 27705.3, 29250.0, 30271.0};
// The lowest limit measured, as a fraction of the maximum.
constexpr double kLowestMeasuredFraction = kCapW.front() / kCapW.back();

}  // namespace

double training_throughput_at(double fraction) {
  const double watts = fraction * kCapW.back();
  if (!(watts >= kCapW.front() - 1e-9 && watts <= kCapW.back() + 1e-9))
    throw ConfigError(fmt::format("a power limit of {:.3g} of the maximum is outside the measured {:.3g} … 1", fraction,
                                  kLowestMeasuredFraction));
  std::size_t i = 1;
  while (i + 1 < kCapW.size() && watts > kCapW[i]) ++i;
  const double t = std::clamp((watts - kCapW[i - 1]) / (kCapW[i] - kCapW[i - 1]), 0.0, 1.0);
  return (kTokensPerS[i - 1] + t * (kTokensPerS[i] - kTokensPerS[i - 1])) / kTokensPerS.back();
}

HardwareProfile under_power_limit(HardwareProfile hw, double watts) {
  if (!hw.gpu.sustained || !hw.gpu.sustained->board_power_w)
    throw ConfigError(
        fmt::format("profile {} gives no gpu.sustained.board_power_W, the limit its sustained "
                    "rates hold at, which a power-limit what-if scales from",
                    hw.name));
  SustainedRates& s = *hw.gpu.sustained;
  const double board = *s.board_power_w;
  const double most = s.max_power_w.value_or(board);
  if (!(std::isfinite(watts) && watts <= most && watts >= kLowestMeasuredFraction * most))
    throw ConfigError(
        fmt::format("{} W is outside {:.0f} … {:.0f} W, the limits profile {} can be given ({:.0f} W "
                    "its maximum, {:.2g} of it the lowest limit measured)",
                    watts, kLowestMeasuredFraction * most, most, hw.name, most, kLowestMeasuredFraction));
  const double scale = training_throughput_at(watts / most) / training_throughput_at(board / most);
  for (auto& f : s.tensor)
    if (f) f = std::min(1.0, *f * scale);
  s.board_power_w = watts;
  const std::string at = fmt::format(" at {:.0f} W", watts);
  hw.name += at;
  hw.gpu.name += at;  // what a step's summary names
  return hw;
}

}  // namespace ptsim::hardware

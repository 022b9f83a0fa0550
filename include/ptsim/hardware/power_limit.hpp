// A lower (or restored) board power limit as a what-if on a profile: the
// tensor cores keep the fraction of their burst rate that training keeps at
// that limit, by the one published measurement of training throughput
// against an H100's power cap (see power_limit.cpp for its source).
#pragma once

#include "ptsim/hardware/hardware_profile.hpp"

namespace ptsim::hardware {

/// Training throughput at a board power limit of `fraction` of the part's
/// maximum, relative to the throughput at that maximum (piecewise linear
/// between the measured caps; `fraction` within [2/7, 1], the caps measured).
double training_throughput_at(double fraction);

/// `hw` under a board power limit of `watts`: every sustained tensor-core
/// fraction scaled by training_throughput_at(watts / max) over
/// training_throughput_at(board / max) (the limit it was measured or
/// derived at), memory-bound rates unchanged (the HBM clock is not what a
/// power cap lowers), `gpu.sustained.board_power_W` set to `watts` and the
/// profile's and the GPU's names marked. A whole step slows less than its tensor cores alone, so a
/// lowered limit errs fast. ConfigError where the profile has no sustained
/// block or board power limit, or `watts` is outside what was measured.
HardwareProfile under_power_limit(HardwareProfile hw, double watts);

}  // namespace ptsim::hardware

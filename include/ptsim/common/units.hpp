// Unit constants used at the edges where files and flags turn into SI values.
// Inside the flow, every quantity is in seconds, bytes or FLOP.
#pragma once

#include <cstdint>

namespace ptsim::units {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;  // bytes
inline constexpr double kGB = 1e9;                        // bytes (decimal, as link rates)
inline constexpr double kTera = 1e12;                     // FLOP/s in one TFLOP/s

}  // namespace ptsim::units

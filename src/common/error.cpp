// Formats a broken invariant into an InternalError (see common/error.hpp).
#include "ptsim/common/error.hpp"

#include "ptsim/common/time.hpp"

#include <fmt/format.h>

namespace ptsim {

void fail_invariant(const char* condition, const char* file, int line,
                    const std::string& message) {
  throw InternalError(
      fmt::format("internal error: {} ({} failed at {}:{}); please report this", message,
                  condition, file, line));
}

void fail_time_range(double seconds, const char* what) {
  throw SimulationError(fmt::format(
      "{} of {:g} s is outside simulated time's range [0, {:g} s] (about 146 years): the inputs "
      "predict an absurd time; check the hardware profile's rates, bandwidths and calibration "
      "ratios and the model's sizes",
      what, seconds, Time::max_seconds));
}

}  // namespace ptsim

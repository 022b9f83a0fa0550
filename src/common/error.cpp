// Formats a broken invariant into an InternalError (see common/error.hpp).
#include "ptsim/common/error.hpp"

#include <fmt/format.h>

namespace ptsim {

void fail_invariant(const char* condition, const char* file, int line,
                    const std::string& message) {
  throw InternalError(
      fmt::format("internal error: {} ({} failed at {}:{}); please report this", message,
                  condition, file, line));
}

}  // namespace ptsim

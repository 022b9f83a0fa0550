// Sizes on the command line (see sizes.hpp).
#include "sizes.hpp"

#include <fmt/format.h>

#include <cmath>
#include <exception>

#include "ptsim/common/error.hpp"

namespace ptsim::cli {

std::uint64_t parse_size(const std::string& text, const std::string& flag) {
  std::size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::uint64_t unit = 1;
  const std::string suffix = text.substr(used);
  if (suffix == "K" || suffix == "k") unit = 1ull << 10;
  else if (suffix == "M" || suffix == "m") unit = 1ull << 20;
  else if (suffix == "G" || suffix == "g") unit = 1ull << 30;
  else if (!suffix.empty()) used = 0;
  if (used == 0 || !(value > 0) || value * static_cast<double>(unit) > 1e15)
    throw ConfigError(fmt::format("{}: '{}' is not a size; give bytes with an optional K, M or "
                                  "G suffix (powers of 1024), at most 1e15 bytes, e.g. 1M,64M,1G",
                                  flag, text));
  return static_cast<std::uint64_t>(std::llround(value * static_cast<double>(unit)));
}

}  // namespace ptsim::cli

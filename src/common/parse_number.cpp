// Whole-text number parsing (see parse_number.hpp).
#include "ptsim/common/parse_number.hpp"

#include <exception>

namespace ptsim {

std::optional<std::int64_t> whole_number(const std::string& text) {
  std::size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;  // not a number, or out of range
  }
  if (used == 0 || used != text.size()) return std::nullopt;
  return n;
}

std::optional<double> decimal_number(const std::string& text) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || used != text.size()) return std::nullopt;
  return x;
}

}  // namespace ptsim

// Numbers as a user writes them in a flag's text: the whole text one number,
// or nothing. Callers say what was expected and where.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ptsim {

/// `text` as a whole number (std::stoll's syntax), if all of it is one.
std::optional<std::int64_t> whole_number(const std::string& text);

/// `text` as a number (std::stod's syntax), if all of it is one.
std::optional<double> decimal_number(const std::string& text);

}  // namespace ptsim

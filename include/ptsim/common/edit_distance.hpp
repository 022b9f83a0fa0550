// How far one name is from another, for "did you mean" suggestions.
#pragma once

#include <cstddef>
#include <string_view>

namespace ptsim {

/// Edits (insert, delete, substitute, swap two adjacent letters) from `a`
/// to `b`: optimal string alignment distance. "--tpp" is 1 from "--tp".
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace ptsim

// Where a command finds the files ptsim ships (profiles, the software file,
// the report renderer) when the user names none: in the tree ptsim was built
// from, whatever the working directory.
#pragma once

#include <string>

namespace ptsim::cli {

/// `relative` (e.g. "hw_profiles", "validation/software.json") inside the
/// source tree this ptsim was built from.
std::string shipped_file(const std::string& relative);

}  // namespace ptsim::cli

// Where a command finds the files ptsim ships (profiles, the software file,
// the error bands) when the user names none, whatever the working
// directory: under share/ptsim beside an installed bin/ptsim, else in the
// tree ptsim was built from. (The report renderer lies beside the binary.)
#pragma once

#include <string>

namespace ptsim::cli {

/// `relative` (e.g. "hw_profiles", "validation/software.json") in the
/// installed share/ptsim when it is there, else in the source tree.
std::string shipped_file(const std::string& relative);

}  // namespace ptsim::cli

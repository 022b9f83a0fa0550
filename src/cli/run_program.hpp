// Runs another program without a shell (no quoting, no word splitting):
// ptsim report runs its renderer this way.
#pragma once

#include <string>
#include <vector>

namespace ptsim::cli {

/// Runs `argv[0]` (a path) with `argv`, waits, and returns its exit status
/// (128 + the signal when a signal ended it); throws ConfigError when it
/// cannot be started.
int run_program(const std::vector<std::string>& argv);

/// The folder of the running executable (/proc/self/exe), where the files
/// installed beside it live.
std::string executable_directory();

}  // namespace ptsim::cli

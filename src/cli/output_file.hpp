// Writing an output file safely: to a temporary file beside it, renamed into
// place when complete, so an interrupted run never leaves half a file; and
// never over one of the run's own inputs.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace ptsim::cli {

/// Calls `write` with a stream to a temporary file, then renames it to
/// `path`. Throws ConfigError when `path` is one of `inputs` or cannot be
/// written.
void write_output_file(const std::string& path, const std::vector<std::string>& inputs,
                       const std::function<void(std::ostream&)>& write);

}  // namespace ptsim::cli

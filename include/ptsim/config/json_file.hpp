// Reading input files, and remembering them: every file this process has read
// as an input (model, profile, strategy, runs, measurements, software, a
// sweep's spec) is listed, and output writers refuse to replace any of them,
// whichever command read it and however it was named.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ptsim::config {

/// Parses a JSON file; ConfigError naming the file for an unreadable file,
/// bad syntax or a number beyond a double. Records the path (files_read).
nlohmann::json read_json_file(const std::string& path);

/// The paths read so far, as they were given, in reading order.
std::vector<std::string> files_read();

}  // namespace ptsim::config

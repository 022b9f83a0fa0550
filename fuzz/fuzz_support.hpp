// Shared by the libFuzzer targets: every reader takes a path, so each input
// goes through a file of the process's own, exactly as a user's file would.
// A reader may reject an input only with ConfigError (a message naming the
// file, field and value); any other exception, a crash, a sanitizer report,
// a leak or a hang is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "ptsim/common/error.hpp"

namespace ptsim::fuzz {

/// A scratch file private to this process, rewritten with each input.
inline const std::string& input_path(const char* extension = ".json") {
  static const std::string path = (std::filesystem::temp_directory_path() /
                                   ("ptsim-fuzz-" + std::to_string(::getpid()) + extension))
                                      .string();
  return path;
}

inline const std::string& write_input(const std::uint8_t* data, std::size_t size) {
  const std::string& path = input_path();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                               static_cast<std::streamsize>(size));
  return path;
}

/// Runs `read`; a ConfigError is the expected way to refuse an input.
template <typename Read>
void expect_only_config_errors(Read&& read) {
  try {
    read();
  } catch (const ConfigError&) {
  }
}

}  // namespace ptsim::fuzz

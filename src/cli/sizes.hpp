// Message sizes as users write them on the command line: bytes with an
// optional K, M or G suffix (powers of 1024), as nccl-tests' -b and -e take them.
#pragma once

#include <cstdint>
#include <string>

namespace ptsim::cli {

/// Throws ConfigError naming `flag` for anything but a positive size up to 1e15 bytes.
std::uint64_t parse_size(const std::string& text, const std::string& flag);

}  // namespace ptsim::cli

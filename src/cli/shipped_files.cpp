// Shipped files by their place in the source tree (see shipped_files.hpp).
#include "shipped_files.hpp"

#include <filesystem>

namespace ptsim::cli {

std::string shipped_file(const std::string& relative) {
  // PTSIM_SOURCE_DIR: set by src/CMakeLists.txt for the CLI library.
  return (std::filesystem::path(PTSIM_SOURCE_DIR) / relative).string();
}

}  // namespace ptsim::cli

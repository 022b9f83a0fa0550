// Shipped files, installed or in the source tree (see shipped_files.hpp).
#include "shipped_files.hpp"

#include <filesystem>

#include "run_program.hpp"

namespace ptsim::cli {

std::string shipped_file(const std::string& relative) {
  // An installed ptsim: bin/ptsim beside share/ptsim (src/CMakeLists.txt's
  // install rules). A build tree's: the sources it was built from
  // (PTSIM_SOURCE_DIR, set by src/CMakeLists.txt for the CLI library).
  const std::filesystem::path installed =
      std::filesystem::path(executable_directory()).parent_path() / "share" / "ptsim" / relative;
  std::error_code ec;
  if (std::filesystem::exists(installed, ec)) return installed.string();
  return (std::filesystem::path(PTSIM_SOURCE_DIR) / relative).string();
}

}  // namespace ptsim::cli

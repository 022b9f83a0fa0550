// Atomic output files (see output_file.hpp).
#include "output_file.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "ptsim/common/error.hpp"
#include "ptsim/config/json_file.hpp"

namespace ptsim::cli {

namespace fs = std::filesystem;

void write_output_file(const std::string& path, const std::vector<std::string>& inputs,
                       const std::function<void(std::ostream&)>& write) {
  std::error_code ec;
  std::vector<std::string> read = config::files_read();
  read.insert(read.end(), inputs.begin(), inputs.end());
  for (const auto& input : read)
    if (!input.empty() && fs::exists(path, ec) && fs::equivalent(path, input, ec))
      throw ConfigError(fmt::format("{}: refusing to overwrite {}, an input of this run; choose "
                                    "another output path", path, input));
  const fs::path target(path);
  // A name of this process's own beside the target: the rename stays on one
  // file system, and two runs writing the same path do not share a temporary.
  static std::atomic<unsigned> serial{0};
  const fs::path temporary = fmt::format("{}.{}.{}.tmp", target.string(), ::getpid(), serial++);
  try {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      throw ConfigError(fmt::format("{}: cannot write here; check that the directory exists and "
                                    "is writable", path));
    write(out);
    out.flush();
    if (!out) throw ConfigError(fmt::format("{}: writing failed (disk full?)", path));
  } catch (...) {
    fs::remove(temporary, ec);  // never leave a partial file behind, whatever failed
    throw;
  }
  fs::rename(temporary, target, ec);
  if (ec) {
    const std::string reason = ec.message();
    fs::remove(temporary, ec);
    throw ConfigError(fmt::format("{}: cannot move the finished file into place: {}", path,
                                  reason));
  }
}

}  // namespace ptsim::cli

// Atomic output files (see output_file.hpp).
#include "output_file.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <system_error>

#include "ptsim/common/error.hpp"

namespace ptsim::cli {

namespace fs = std::filesystem;

void write_output_file(const std::string& path, const std::vector<std::string>& inputs,
                       const std::function<void(std::ostream&)>& write) {
  std::error_code ec;
  for (const auto& input : inputs)
    if (!input.empty() && fs::exists(path, ec) && fs::equivalent(path, input, ec))
      throw ConfigError(fmt::format("{}: refusing to overwrite an input of this run; choose "
                                    "another output path", path));
  const fs::path target(path);
  const fs::path temporary = target.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      throw ConfigError(fmt::format("{}: cannot write here; check that the directory exists and "
                                    "is writable", path));
    write(out);
    out.flush();
    if (!out) {
      fs::remove(temporary, ec);
      throw ConfigError(fmt::format("{}: writing failed (disk full?)", path));
    }
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

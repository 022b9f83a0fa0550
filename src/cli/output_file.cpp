// Atomic output files (see output_file.hpp).
#include "output_file.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include "ptsim/common/error.hpp"
#include "ptsim/config/json_file.hpp"

namespace ptsim::cli {

namespace fs = std::filesystem;

namespace {

// The temporary being written, for the signal handler: an interrupted run
// (Ctrl-C, a CI job's timeout) removes it, so it leaves neither a half-written
// output nor a stray temporary. Outputs are written one at a time, from the
// main thread.
char pending_temporary[4096] = {};

extern "C" void remove_pending_and_reraise(int signal) {
  if (pending_temporary[0] != '\0') ::unlink(pending_temporary);  // async-signal-safe
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

class PendingTemporary {
 public:
  explicit PendingTemporary(const std::string& path) {
    if (path.size() >= sizeof pending_temporary) return;  // too long to record: no cleanup on a signal
    std::memcpy(pending_temporary, path.c_str(), path.size() + 1);
    for (const int s : {SIGINT, SIGTERM, SIGHUP}) previous_.push_back(std::signal(s, remove_pending_and_reraise));
  }
  ~PendingTemporary() {
    std::size_t i = 0;
    for (const int s : {SIGINT, SIGTERM, SIGHUP})
      if (i < previous_.size()) std::signal(s, previous_[i++]);
    pending_temporary[0] = '\0';
  }
  PendingTemporary(const PendingTemporary&) = delete;
  PendingTemporary& operator=(const PendingTemporary&) = delete;

 private:
  std::vector<void (*)(int)> previous_;
};

}  // namespace

namespace {

void refuse_inputs(const std::string& path, const std::vector<std::string>& inputs) {
  std::error_code ec;
  std::vector<std::string> read = config::files_read();
  read.insert(read.end(), inputs.begin(), inputs.end());
  for (const auto& input : read)
    if (!input.empty() && fs::exists(path, ec) && fs::equivalent(path, input, ec))
      throw ConfigError(fmt::format("{}: refusing to overwrite {}, an input of this run; choose "
                                    "another output path", path, input));
}

}  // namespace

void check_output_paths(const std::vector<std::pair<std::string, std::string>>& outputs,
                        const std::vector<std::string>& inputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& [flag, path] = outputs[i];
    if (path.empty()) continue;
    for (std::size_t k = 0; k < i; ++k)
      if (outputs[k].second == path)
        throw ConfigError(fmt::format("{} {}: the same file as {}; give each output a path of its own", flag, path,
                                      outputs[k].first));
    refuse_inputs(path, inputs);
    const fs::path dir = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
    std::error_code ec;
    if (!fs::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0)
      throw ConfigError(fmt::format("{} {}: cannot write there; {} is not a writable directory", flag, path,
                                    dir.string()));
  }
}

void write_output_file(const std::string& path, const std::vector<std::string>& inputs,
                       const std::function<void(std::ostream&)>& write) {
  std::error_code ec;
  refuse_inputs(path, inputs);
  const fs::path target(path);
  // A name of this process's own beside the target: the rename stays on one
  // file system, and two runs writing the same path do not share a temporary.
  static std::atomic<unsigned> serial{0};
  const fs::path temporary = fmt::format("{}.{}.{}.tmp", target.string(), ::getpid(), serial++);
  const PendingTemporary pending(temporary.string());
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

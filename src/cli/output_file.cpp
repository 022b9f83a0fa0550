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

namespace ptsim::cli {

namespace fs = std::filesystem;

namespace {

// The temporaries being written, for the signal handler: an interrupted run
// (Ctrl-C, a CI job's timeout) removes them, so it leaves neither a
// half-written output nor a stray temporary. Outputs are written from the
// main thread, a run's few together.
constexpr std::size_t kMaxPending = 8;
constexpr std::size_t kMaxPath = 4096;
char pending_temporaries[kMaxPending][kMaxPath] = {};

extern "C" void remove_pending_and_reraise(int signal) {
  for (auto& path : pending_temporaries)
    if (path[0] != '\0') ::unlink(path);  // async-signal-safe
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

// Records `paths` for the handler while it lives (those that fit: a path too
// long or beyond kMaxPending is not cleaned up on a signal).
class PendingTemporaries {
 public:
  explicit PendingTemporaries(const std::vector<std::string>& paths) {
    for (std::size_t i = 0; i < paths.size() && i < kMaxPending; ++i)
      if (paths[i].size() < kMaxPath) std::memcpy(pending_temporaries[i], paths[i].c_str(), paths[i].size() + 1);
    for (const int s : {SIGINT, SIGTERM, SIGHUP}) previous_.push_back(std::signal(s, remove_pending_and_reraise));
  }
  ~PendingTemporaries() {
    std::size_t i = 0;
    for (const int s : {SIGINT, SIGTERM, SIGHUP})
      if (i < previous_.size()) std::signal(s, previous_[i++]);
    for (auto& path : pending_temporaries) path[0] = '\0';
  }
  PendingTemporaries(const PendingTemporaries&) = delete;
  PendingTemporaries& operator=(const PendingTemporaries&) = delete;

 private:
  std::vector<void (*)(int)> previous_;
};

}  // namespace

namespace {

void refuse_inputs(const std::string& path, const config::InputFiles& inputs) {
  std::error_code ec;
  for (const auto& input : inputs.paths())
    if (fs::exists(path, ec) && fs::equivalent(path, input, ec))
      throw ConfigError(fmt::format("{}: refusing to overwrite {}, an input of this run; choose "
                                    "another output path", path, input));
}

}  // namespace

void check_output_paths(const std::vector<std::pair<std::string, std::string>>& outputs,
                        const config::InputFiles& inputs) {
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

void check_output_directory(const std::string& flag, const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::absolute(fs::path(dir), ec);
  if (ec) throw ConfigError(fmt::format("{} {}: {}", flag, dir, ec.message()));
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec) || ::access(p.c_str(), W_OK) != 0)
      throw ConfigError(fmt::format("{} {}: not a writable directory", flag, dir));
    return;
  }
  // The directory will be made: try it now and take back what was made, so
  // that a path no permission bit predicts (/proc, a read-only mount, root's
  // access()) fails before the work.
  fs::path first = p;
  while (first.has_parent_path() && first.parent_path() != first && !fs::exists(first.parent_path(), ec))
    first = first.parent_path();
  fs::create_directories(p, ec);
  if (ec) throw ConfigError(fmt::format("{} {}: cannot make the directory: {}", flag, dir, ec.message()));
  fs::remove_all(first, ec);
}

void make_output_directory(const std::string& flag, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ConfigError(fmt::format("{} {}: cannot make the directory: {}", flag, dir, ec.message()));
  if (!fs::is_directory(dir, ec)) throw ConfigError(fmt::format("{} {}: not a directory", flag, dir));
}

void write_output_files(const std::vector<OutputFile>& outputs, const config::InputFiles& inputs) {
  std::error_code ec;
  for (const auto& o : outputs) refuse_inputs(o.path, inputs);
  // Names of this process's own beside each target: the rename stays on one
  // file system, and two runs writing the same path do not share a temporary.
  static std::atomic<unsigned> serial{0};
  std::vector<std::string> temporaries;
  for (const auto& o : outputs) temporaries.push_back(fmt::format("{}.{}.{}.tmp", o.path, ::getpid(), serial++));
  const PendingTemporaries pending(temporaries);
  const auto remove_all = [&] {
    for (const auto& t : temporaries) fs::remove(t, ec);
  };
  // Every output complete in its temporary before any is moved into place:
  // one that cannot be written leaves none behind.
  try {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      std::ofstream out(temporaries[i], std::ios::binary | std::ios::trunc);
      if (!out)
        throw ConfigError(fmt::format("{}: cannot write here; check that the directory exists and "
                                      "is writable", outputs[i].path));
      outputs[i].write(out);
      out.flush();
      if (!out) throw ConfigError(fmt::format("{}: writing failed (disk full?)", outputs[i].path));
    }
  } catch (...) {
    remove_all();  // never leave a partial file behind, whatever failed
    throw;
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    fs::rename(temporaries[i], outputs[i].path, ec);
    if (ec) {
      const std::string reason = ec.message();
      remove_all();
      throw ConfigError(fmt::format("{}: cannot move the finished file into place: {}", outputs[i].path, reason));
    }
  }
}

void write_output_file(const std::string& path, const config::InputFiles& inputs,
                       const std::function<void(std::ostream&)>& write) {
  write_output_files({{path, write}}, inputs);
}

}  // namespace ptsim::cli

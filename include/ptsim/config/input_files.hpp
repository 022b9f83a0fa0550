// InputFiles: the files one command reads as inputs — model, profile,
// strategy, runs, measurements, software, a sweep's spec, an nccl-tests log,
// and the files those name. Every loader records into the one it is given,
// and output writers refuse to replace any of them, whichever loader read it
// and however it was named. A command owns one; nothing is process-wide.
#pragma once

#include <mutex>
#include <string>
#include <vector>

namespace ptsim::config {

class InputFiles {
 public:
  InputFiles() = default;
  InputFiles(const InputFiles&) = delete;
  InputFiles& operator=(const InputFiles&) = delete;

  /// Adds `path` (as given) unless it is empty or already there. Loaders
  /// record before they read; a command records the paths it will read
  /// before it checks its outputs. Safe from several threads.
  void record(const std::string& path);
  /// The paths recorded, in the order they were first recorded.
  std::vector<std::string> paths() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> paths_;
};

}  // namespace ptsim::config

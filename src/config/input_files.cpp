// The files a command reads (see input_files.hpp).
#include "ptsim/config/input_files.hpp"

#include <algorithm>

namespace ptsim::config {

void InputFiles::record(const std::string& path) {
  if (path.empty()) return;
  const std::lock_guard lock(mutex_);
  if (std::find(paths_.begin(), paths_.end(), path) == paths_.end()) paths_.push_back(path);
}

std::vector<std::string> InputFiles::paths() const {
  const std::lock_guard lock(mutex_);
  return paths_;
}

}  // namespace ptsim::config

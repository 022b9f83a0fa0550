// NameTable: interns op names into the indices Tasks carry. Private to workload/.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace ptsim::workload::internal {

class NameTable {
 public:
  std::uint32_t intern(const std::string& name) {
    const auto [it, inserted] = index_.try_emplace(name, static_cast<std::uint32_t>(names_.size()));
    if (inserted) names_.push_back(name);
    return it->second;
  }
  std::vector<std::string> take() { return std::move(names_); }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::uint32_t> index_;
};

}  // namespace ptsim::workload::internal

// Small helpers of Workload (see workload.hpp).
#include "ptsim/taskgraph/workload.hpp"

#include <algorithm>

namespace ptsim::taskgraph {

std::uint32_t Workload::intern(std::vector<std::string>& table, const std::string& name) {
  const auto it = std::find(table.begin(), table.end(), name);
  if (it != table.end()) return static_cast<std::uint32_t>(it - table.begin());
  table.push_back(name);
  return static_cast<std::uint32_t>(table.size() - 1);
}

}  // namespace ptsim::taskgraph

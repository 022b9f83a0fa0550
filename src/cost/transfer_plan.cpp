// Uncontended time of a transfer plan (see transfer_plan.hpp).
#include "ptsim/cost/transfer_plan.hpp"

#include <algorithm>
#include <unordered_map>

namespace ptsim::cost {

std::string_view to_string(Algorithm a) {
  switch (a) {
    case Algorithm::Ring: return "ring";
    case Algorithm::Tree: return "tree";
    case Algorithm::Nvls: return "nvls";
    case Algorithm::Hierarchical: return "hierarchical";
    case Algorithm::CollNet: return "collnet";
    case Algorithm::Direct: return "direct";
    case Algorithm::NvlsTree: return "nvls_tree";
  }
  return "?";
}

namespace {
constexpr Algorithm kAlgorithms[] = {Algorithm::Ring,    Algorithm::Tree,         Algorithm::Nvls,  Algorithm::NvlsTree,
                                     Algorithm::CollNet, Algorithm::Hierarchical, Algorithm::Direct};
}  // namespace

std::optional<Algorithm> algorithm_named(std::string_view name) {
  for (const Algorithm a : kAlgorithms)
    if (to_string(a) == name) return a;
  return std::nullopt;
}

std::string algorithm_names() {
  std::string out;
  for (const Algorithm a : kAlgorithms) out += (out.empty() ? "" : ", ") + std::string(to_string(a));
  return out;
}

std::string_view to_string(Protocol p) {
  switch (p) {
    case Protocol::LL: return "LL";
    case Protocol::LL128: return "LL128";
    case Protocol::Simple: return "Simple";
  }
  return "?";
}

double phase_transfer_seconds(const PhaseSpec& phase, const hardware::Cluster& cluster) {
  std::unordered_map<hardware::LinkId, double> load;
  double longest = 0;
  for (const FlowSpec& f : phase.flows) {
    for (const hardware::LinkId link : f.path.view()) load[link] += f.bytes;
    if (f.max_rate > 0) longest = std::max(longest, f.bytes / f.max_rate);
  }
  for (const auto& [link, bytes] : load) longest = std::max(longest, bytes / cluster.capacity(link));
  return longest;
}

double plan_seconds(const TransferPlan& plan, const hardware::Cluster& cluster) {
  double t = 0;
  for (const PhaseSpec& phase : plan.phases)
    t += phase_transfer_seconds(phase, cluster) + phase.latency.seconds();
  return t;
}

}  // namespace ptsim::cost

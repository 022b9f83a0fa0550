// TransferPlan: how a collective or transfer moves its bytes — the NCCL
// algorithm and protocol chosen, then phases run one after the other, each a
// set of flows (bytes on a path of links) that run at the same time, plus the
// phase's latency. The engine runs the flows on shared links; alone on their
// links a plan takes estimated_s.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptsim/common/ids.hpp"
#include "ptsim/common/time.hpp"
#include "ptsim/hardware/cluster.hpp"

namespace ptsim::cost {

enum class Algorithm : std::uint8_t { Ring, Tree, Nvls, Hierarchical, CollNet, Direct, NvlsTree };
enum class Protocol : std::uint8_t { LL, LL128, Simple };

std::string_view to_string(Algorithm a);
std::string_view to_string(Protocol p);

/// The algorithm `to_string` names so, if any.
std::optional<Algorithm> algorithm_named(std::string_view name);
/// Every algorithm's name, for messages and help.
std::string algorithm_names();

struct FlowSpec {
  Rank src = 0;
  Rank dst = 0;
  double bytes = 0;         // bytes on the wire (protocol overhead included)
  hardware::Path path;
  double max_rate = 0;      // bytes/s cap of the flow itself (0: links only)
};

struct PhaseSpec {
  std::vector<FlowSpec> flows;
  Time latency;  // added once the phase's flows are done
};

struct TransferPlan {
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  std::vector<PhaseSpec> phases;
  double estimated_s = 0;  // time with no other traffic on its links
};

/// Time of a phase's flows alone on the cluster: the busiest link's bytes over
/// its capacity, or a flow's bytes over its own cap, whichever is longer.
double phase_transfer_seconds(const PhaseSpec& phase, const hardware::Cluster& cluster);

/// Sum over phases of transfer time and latency.
double plan_seconds(const TransferPlan& plan, const hardware::Cluster& cluster);

}  // namespace ptsim::cost

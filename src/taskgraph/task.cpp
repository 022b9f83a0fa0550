// Names of task enums (see task.hpp).
#include "ptsim/taskgraph/task.hpp"

namespace ptsim::taskgraph {

std::string_view to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::None: return "none";
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::Reduce: return "reduce";
    case CollectiveKind::AllToAll: return "all_to_all";
    case CollectiveKind::PointToPoint: return "send_recv";
  }
  return "?";
}

}  // namespace ptsim::taskgraph

// Communicator construction from the rank layout (see internal/communicators.hpp).
#include "internal/communicators.hpp"

#include "ptsim/workload/step_workload.hpp"

namespace ptsim::workload::internal {

namespace {

using strategy::Axis;
using taskgraph::CommunicatorId;

CommunicatorId add(taskgraph::Workload& w, std::vector<Rank> members) {
  w.communicators.push_back({std::move(members)});
  return static_cast<CommunicatorId>(w.communicators.size() - 1);
}

void assign(taskgraph::Workload& w, Rank rank, std::uint8_t slot, CommunicatorId id) {
  w.communicator_of[static_cast<std::size_t>(rank) * w.comm_slot_names.size() + slot] = id;
}

// One communicator per group along `axis`, reached through `slot`.
void add_groups(const strategy::RankLayout& layout, Axis axis, std::uint8_t slot,
                taskgraph::Workload& w) {
  if (layout.size(axis) == 1) return;
  for (auto& group : layout.all_groups(axis)) {
    const auto members = group;
    const CommunicatorId id = add(w, std::move(group));
    for (const Rank r : members) assign(w, r, slot, id);
  }
}

}  // namespace

void add_communicators(const strategy::RankLayout& layout, bool embedding_group,
                       taskgraph::Workload& w) {
  w.communicator_of.assign(
      static_cast<std::size_t>(layout.world_size()) * w.comm_slot_names.size(),
      taskgraph::kNoCommunicator);
  add_groups(layout, Axis::Tp, slots::kTensorParallel, w);
  add_groups(layout, Axis::Dp, slots::kDataParallel, w);
  const std::int64_t pp = layout.size(Axis::Pp);
  for (Rank r = 0; r < layout.world_size(); ++r) {
    const std::int64_t stage = layout.coordinate(r, Axis::Pp);
    if (stage + 1 < pp) {
      const Rank next = layout.with_coordinate(r, Axis::Pp, stage + 1);
      const CommunicatorId forward = add(w, {r, next});
      assign(w, r, slots::kPipelineForwardSend, forward);
      assign(w, next, slots::kPipelineForwardRecv, forward);
      const CommunicatorId backward = add(w, {next, r});
      assign(w, next, slots::kPipelineBackwardSend, backward);
      assign(w, r, slots::kPipelineBackwardRecv, backward);
    }
    if (embedding_group && stage == 0) {
      const Rank last = layout.with_coordinate(r, Axis::Pp, pp - 1);
      const CommunicatorId id = add(w, {r, last});
      assign(w, r, slots::kEmbedding, id);
      assign(w, last, slots::kEmbedding, id);
    }
  }
}

}  // namespace ptsim::workload::internal

// Communicator construction from the rank layouts (see internal/communicators.hpp).
#include "internal/communicators.hpp"

#include <algorithm>

#include "ptsim/workload/step_workload.hpp"
#include "ptsim/strategy/schedule.hpp"

namespace ptsim::workload::internal {

namespace {

using strategy::Axis;
using strategy::ScheduleKind;
using taskgraph::CommunicatorId;

// Hybrid sharding's two groups of rank r among its data-parallel group
// (`axes` of `layout`): the contiguous run of `shard` Dp coordinates that
// holds r (every rank of the other axes with it), or, for `replicas`, the
// ranks at r's place in every run.
std::vector<Rank> split_group(const strategy::RankLayout& layout, Rank r, std::initializer_list<Axis> axes,
                              std::int64_t shard, bool replicas) {
  const std::int64_t d = layout.coordinate(r, Axis::Dp);
  std::vector<Rank> out;
  for (const Rank m : layout.group(r, replicas ? std::initializer_list<Axis>{Axis::Dp} : axes)) {
    const std::int64_t e = layout.coordinate(m, Axis::Dp);
    if (replicas ? e % shard == d % shard : e / shard == d / shard) out.push_back(m);
  }
  return out;
}

class Builder {
 public:
  explicit Builder(taskgraph::Workload& w) : w_(w) {}

  CommunicatorId add(std::vector<Rank> members) {
    w_.communicators.push_back({std::move(members), std::nullopt});
    return static_cast<CommunicatorId>(w_.communicators.size() - 1);
  }

  void assign(Rank rank, std::uint8_t slot, CommunicatorId id) {
    w_.communicator_of[static_cast<std::size_t>(rank) * w_.comm_slot_names.size() + slot] = id;
  }

  // One communicator per distinct group, reached through `slot`: ranks with
  // the same `leader_of` share a group, whose members `group_of` lists once
  // (not per rank: DP groups of hundreds of ranks times thousands of ranks).
  // Communicators are numbered in the order of their first member.
  template <typename LeaderOf, typename GroupOf>
  void add_groups(std::int64_t world, std::uint8_t slot, LeaderOf leader_of, GroupOf group_of) {
    constexpr CommunicatorId kUnseen = taskgraph::kNoCommunicator - 1;
    std::vector<CommunicatorId> by_leader(static_cast<std::size_t>(world), kUnseen);
    for (Rank r = 0; r < world; ++r) {
      CommunicatorId& id = by_leader[static_cast<std::size_t>(leader_of(r))];
      if (id == kUnseen) {
        std::vector<Rank> members = group_of(r);
        id = members.size() < 2 ? taskgraph::kNoCommunicator : add(std::move(members));
      }
      if (id != taskgraph::kNoCommunicator) assign(r, slot, id);
    }
  }

  // Hybrid sharding: `inner` reaches the run of `shard` data-parallel ranks
  // that shard together, `outer` the replicas of each shard (split_group).
  void add_split_groups(std::int64_t world, const strategy::RankLayout& layout, std::initializer_list<Axis> axes,
                        std::int64_t shard, std::uint8_t inner, std::uint8_t outer) {
    for (const bool replicas : {false, true})
      add_groups(
          world, replicas ? outer : inner,
          [&](Rank r) { return split_group(layout, r, axes, shard, replicas).front(); },
          [&](Rank r) { return split_group(layout, r, axes, shard, replicas); });
  }

  // A one-way channel from `from` to `to`.
  void channel(Rank from, Rank to, std::uint8_t send_slot, std::uint8_t recv_slot) {
    const CommunicatorId id = add({from, to});
    assign(from, send_slot, id);
    assign(to, recv_slot, id);
  }

 private:
  taskgraph::Workload& w_;
};

}  // namespace

void add_communicators(const strategy::ParallelConfig& config, const strategy::RankLayout& dense,
                       const strategy::RankLayout* expert, bool embedding_group, taskgraph::Workload& w) {
  const std::int64_t world = dense.world_size();
  w.communicator_of.assign(static_cast<std::size_t>(world) * w.comm_slot_names.size(), taskgraph::kNoCommunicator);
  Builder b(w);
  const std::int64_t pp = dense.size(Axis::Pp);
  const bool dualpipe = strategy::describe(config.schedule).two_directions;
  // A second compute lane (DualPipe's, combined 1F1B's) issues its TP and EP
  // collectives on communicators of its own.
  const bool two_lanes = dualpipe || config.overlap_moe_expert_parallel_comm;
  // DualPipe: ranks r and p−1−r hold the same two model stages; their
  // gradients are summed together with data parallelism.
  const auto with_mirror = [&](std::vector<Rank> members) {
    if (!dualpipe) return members;
    std::vector<Rank> all = members;
    for (const Rank r : members) {
      const std::int64_t stage = dense.coordinate(r, Axis::Pp);
      if (pp - 1 - stage != stage) all.push_back(dense.with_coordinate(r, Axis::Pp, pp - 1 - stage));
    }
    std::sort(all.begin(), all.end());
    return all;
  };

  // Group leaders: the member with coordinate 0 along the group's axes (the
  // lowest rank of the group); with DualPipe's mirror, the lower of the two.
  const auto zeroed = [](const strategy::RankLayout& layout, Rank r, std::initializer_list<Axis> axes) {
    for (const Axis a : axes) r = layout.with_coordinate(r, a, 0);
    return r;
  };
  const auto mirrored_leader = [&](const strategy::RankLayout& layout, Rank r,
                                   std::initializer_list<Axis> axes) {
    const Rank lead = zeroed(layout, r, axes);
    if (!dualpipe) return lead;
    // The mirror as with_mirror finds it: on the dense layout.
    const Rank mirror = dense.with_coordinate(r, Axis::Pp, pp - 1 - dense.coordinate(r, Axis::Pp));
    return std::min(lead, zeroed(layout, mirror, axes));
  };
  const auto tp_leader = [&](Rank r) { return zeroed(dense, r, {Axis::Tp}); };
  const auto tp_group = [&](Rank r) { return dense.group(r, Axis::Tp); };
  b.add_groups(world, slots::kTensorParallel, tp_leader, tp_group);
  if (two_lanes) b.add_groups(world, slots::kTensorParallel1, tp_leader, tp_group);
  if (config.dp_shard > 0) {
    // HSDP (torchtitan's mesh: dp_shard inside dp_replicate; Megatron's
    // optimizer instances likewise): the shard group
    // is the data-parallel ranks of one replica, dp coordinates
    // [k·shard, (k+1)·shard), with every CP rank; the replicate group the
    // ranks of one dp coordinate modulo shard across the replicas.
    b.add_split_groups(world, dense, {Axis::Cp, Axis::Dp}, config.dp_shard, slots::kDataParallel,
                       slots::kDataParallelReplicate);
  } else {
    b.add_groups(
        world, slots::kDataParallel,
        [&](Rank r) {
          return mirrored_leader(dense, r, {Axis::Cp, Axis::Dp});
        },
        [&](Rank r) {
          return with_mirror(dense.group(r, {Axis::Cp, Axis::Dp}));
        });
  }
  if (config.precision == Dtype::Fp8)
    b.add_groups(
        world, slots::kAmax,
        [&](Rank r) {
          return zeroed(dense, r, {Axis::Tp, Axis::Cp, Axis::Dp});
        },
        [&](Rank r) {
          return dense.group(r, {Axis::Tp, Axis::Cp, Axis::Dp});
        });
  if (expert != nullptr) {
    const auto ep_leader = [&](Rank r) { return zeroed(*expert, r, {Axis::Ep}); };
    const auto ep_group = [&](Rank r) { return expert->group(r, Axis::Ep); };
    const auto etp_leader = [&](Rank r) { return zeroed(*expert, r, {Axis::Tp}); };
    const auto etp_group = [&](Rank r) { return expert->group(r, Axis::Tp); };
    b.add_groups(world, slots::kExpertParallel, ep_leader, ep_group);
    b.add_groups(world, slots::kExpertTensorParallel, etp_leader, etp_group);
    if (config.optimizer_instances > 1) {
      // Megatron's optimizer instances: the intra group is a contiguous run
      // of expert_dp / instances expert-DP coordinates, the inter group the
      // ranks at the same place in each run (parallel_state.py's
      // intra/inter partial expert data-parallel groups).
      b.add_split_groups(world, *expert, {Axis::Dp}, config.expert_gradient_group(), slots::kExpertDataParallel,
                         slots::kExpertDataParallelReplicate);
    } else {
      b.add_groups(
          world, slots::kExpertDataParallel, [&](Rank r) { return mirrored_leader(*expert, r, {Axis::Dp}); },
          [&](Rank r) { return with_mirror(expert->group(r, Axis::Dp)); });
    }
    if (two_lanes) {
      b.add_groups(world, slots::kExpertParallel1, ep_leader, ep_group);
      b.add_groups(world, slots::kExpertTensorParallel1, etp_leader, etp_group);
    }
  }
  // The CP ring: each rank sends to the next rank of its CP group; under
  // torchtitan's modules the group itself too, for PyTorch's all-gather of
  // keys and values.
  if (dense.size(Axis::Cp) > 1) {
    if (config.torch_modules())
      b.add_groups(
          world, slots::kContextParallel, [&](Rank r) { return zeroed(dense, r, {Axis::Cp}); },
          [&](Rank r) { return dense.group(r, Axis::Cp); });
    for (Rank r = 0; r < world; ++r) {
      const std::int64_t c = dense.coordinate(r, Axis::Cp);
      const Rank next = dense.with_coordinate(r, Axis::Cp, (c + 1) % dense.size(Axis::Cp));
      b.channel(r, next, slots::kContextSend, slots::kContextRecv);
    }
  }
  // Pipeline channels between neighbouring stages; the interleaved schedule
  // closes the ring (the last stage feeds the first stage's next chunk);
  // DualPipe's second direction runs the other way on channels of its own.
  const bool ring = strategy::path_stages(config.schedule, pp, strategy::chunks_per_stage(config)) > pp;
  for (Rank r = 0; r < world; ++r) {
    const std::int64_t stage = dense.coordinate(r, Axis::Pp);
    if (stage + 1 < pp || (ring && pp > 1)) {
      const Rank next = dense.with_coordinate(r, Axis::Pp, (stage + 1) % pp);
      b.channel(r, next, slots::kPipelineForwardSend, slots::kPipelineForwardRecv);
      b.channel(next, r, slots::kPipelineBackwardSend, slots::kPipelineBackwardRecv);
      if (dualpipe) {
        b.channel(next, r, slots::kPipeline1ForwardSend, slots::kPipeline1ForwardRecv);
        b.channel(r, next, slots::kPipeline1BackwardSend, slots::kPipeline1BackwardRecv);
      }
    }
    if (embedding_group && stage == 0) {
      const Rank last = dense.with_coordinate(r, Axis::Pp, pp - 1);
      const CommunicatorId id = b.add({r, last});
      b.assign(r, slots::kEmbedding, id);
      b.assign(last, slots::kEmbedding, id);
    }
  }
}

}  // namespace ptsim::workload::internal

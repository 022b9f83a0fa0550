// NCCL-like collective algorithms: for a collective over a group of ranks,
// the traffic each algorithm puts on the cluster's links, and the choice NCCL
// makes — the (algorithm, protocol) with the lowest predicted time.
//
// With S the message size (nccl-tests' convention: the all-reduce buffer, the
// all-gather output, the reduce-scatter input, all-to-all's send buffer), n
// ranks over D NVLink domains of k ranks each:
//   ring          one phase; per rank V/k bytes over its NIC to the rank of the
//                 same position in the next domain and V·(k−1)/k over NVLink
//                 to the next rank of its domain (NCCL runs k channels, each
//                 leaving the domain through a different NIC); V = 2(n−1)/n·S
//                 for all-reduce, (n−1)/n·S for all-gather and reduce-scatter,
//                 S for broadcast and reduce. 2(n−1) steps for all-reduce, of
//                 which 2(D−1) cross the network.
//   tree          all-reduce across domains: a chain inside each domain and a
//                 double binary tree between them; 2S/k per NIC, 2S·(k−1)/k per
//                 NVLink port; 2((k−1) + ⌊log2 D⌋) steps.
// Latencies and protocol bandwidth factors follow NCCL's own tuning model
// (nccl_latency.hpp, docs/nccl-model-constants.md).
//   nvls          all-reduce inside one NVLink domain through NVSwitch's
//                 in-switch reduction: S in and out of each GPU at the NVLS rate.
//   nvls_tree     all-reduce across domains: NVLS inside each, pipelined with
//                 a tree across them; 2S/k per NIC each way (S/k on two
//                 domains), S in and out of each GPU at the NVLS rate.
//   hierarchical  all-reduce: reduce-scatter inside domains, all-reduce of S/k
//                 across domains, all-gather inside domains, one after another.
//   collnet       all-reduce with in-network (SHARP) reduction: as hierarchical,
//                 with the middle phase sending S/k up once and back once.
//   direct        all-to-all and send/recv: every rank sends to its peers at once.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ptsim/cost/nccl_latency.hpp"
#include "ptsim/cost/transfer_plan.hpp"
#include "ptsim/hardware/cluster.hpp"
#include "ptsim/taskgraph/task.hpp"

namespace ptsim::cost {

/// Every (algorithm, protocol) that applies to the collective, each with its
/// flows and estimated time; members in communicator order.
std::vector<TransferPlan> candidate_plans(taskgraph::CollectiveKind kind, std::uint64_t bytes,
                                          std::span<const Rank> members,
                                          const hardware::Cluster& cluster,
                                          const LatencyModel& latency);

/// NCCL's choice: the candidate with the lowest estimated time.
TransferPlan choose_plan(taskgraph::CollectiveKind kind, std::uint64_t bytes,
                         std::span<const Rank> members, const hardware::Cluster& cluster,
                         const LatencyModel& latency);

/// DeepEP's and HybridEP's token exchange (taskgraph::ExpertDispatch) over
/// the expert-parallel group `members`, each holding experts / n experts:
/// `bytes` are a rank's tokens, one copy each, and each token goes to
/// `topk` experts drawn uniformly without replacement (the benchmarks'
/// forced balance; no node-limited routing). A token crosses the network
/// once per other NVLink domain holding one of its experts, to the member at
/// the sender's position there, which forwards it over NVLink to each member
/// holding one; inside the sender's domain it goes straight to each such
/// member. The combine moves the same bytes back. With P_r the chance that a
/// member holds one of a token's experts and P_D that a domain does
/// (1 − C(E − e, k)/C(E, k), e the experts held), a member sends
/// bytes·P_D to each other domain and, on NVLink, bytes·P_r to each
/// domain peer for its own tokens and for those it forwards. The NVLink
/// part moves no faster than the profile's measured rate of the library
/// (HybridEP's or DeepEP's) for the members of a domain (`combine`: the
/// combine's), where the profile has one.
TransferPlan expert_dispatch_plan(std::uint64_t bytes, int topk, int experts, std::span<const Rank> members,
                                  const hardware::Cluster& cluster, const LatencyModel& latency,
                                  taskgraph::ExchangeLibrary library = taskgraph::ExchangeLibrary::DeepEP,
                                  bool combine = false);

}  // namespace ptsim::cost

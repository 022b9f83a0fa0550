// Collective algorithms and NCCL-like selection (see collective_algorithms.hpp).
#include "ptsim/cost/collective_algorithms.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "ptsim/common/error.hpp"
#include "ptsim/cost/expert_exchange.hpp"

namespace ptsim::cost {

namespace {

using taskgraph::CollectiveKind;

// Members grouped by NVLink domain, domains and members in rank order.
struct Layout {
  std::vector<std::vector<Rank>> domains;
  std::size_t n = 0;
  std::size_t k = 0;  // most members in one domain
  std::size_t d() const { return domains.size(); }
};

Layout layout_of(std::span<const Rank> members, const hardware::Cluster& c) {
  std::map<std::int64_t, std::vector<Rank>> by_domain;
  for (const Rank r : members) by_domain[c.domain_of(r)].push_back(r);
  Layout l;
  l.n = members.size();
  for (auto& [domain, ranks] : by_domain) {
    std::sort(ranks.begin(), ranks.end());
    l.k = std::max(l.k, ranks.size());
    l.domains.push_back(std::move(ranks));
  }
  return l;
}

FlowSpec flow(Rank src, Rank dst, double bytes, const hardware::Cluster& c) {
  return {src, dst, bytes, c.path(src, dst), 0};
}

// Ring-shaped traffic: every rank sends `per_rank` bytes around the ring, split
// over k channels that each leave a domain through a different NIC.
std::vector<FlowSpec> ring_flows(const Layout& l, double per_rank, const hardware::Cluster& c) {
  std::vector<FlowSpec> flows;
  if (l.d() == 1) {
    const auto& m = l.domains[0];
    for (std::size_t i = 0; i < m.size(); ++i) flows.push_back(flow(m[i], m[(i + 1) % m.size()], per_rank, c));
    return flows;
  }
  for (std::size_t d = 0; d < l.d(); ++d) {
    const auto& m = l.domains[d];
    const auto& next = l.domains[(d + 1) % l.d()];
    const double k = static_cast<double>(m.size());
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (m.size() > 1) flows.push_back(flow(m[i], m[(i + 1) % m.size()], per_rank * (k - 1) / k, c));
      flows.push_back(flow(m[i], next[i % next.size()], per_rank / k, c));
    }
  }
  return flows;
}

// Ring-shaped traffic inside each domain only (the intra-domain phases).
std::vector<FlowSpec> domain_ring_flows(const Layout& l, double per_rank, const hardware::Cluster& c) {
  std::vector<FlowSpec> flows;
  for (const auto& m : l.domains)
    for (std::size_t i = 0; m.size() > 1 && i < m.size(); ++i)
      flows.push_back(flow(m[i], m[(i + 1) % m.size()], per_rank, c));
  return flows;
}

// Traffic between domains only: each rank to the same position in the next domain.
std::vector<FlowSpec> cross_domain_flows(const Layout& l, double per_rank, const hardware::Cluster& c) {
  std::vector<FlowSpec> flows;
  for (std::size_t d = 0; l.d() > 1 && d < l.d(); ++d) {
    const auto& next = l.domains[(d + 1) % l.d()];
    for (std::size_t i = 0; i < l.domains[d].size(); ++i)
      flows.push_back(flow(l.domains[d][i], next[i % next.size()], per_rank, c));
  }
  return flows;
}

class Planner {
 public:
  Planner(const Layout& l, const hardware::Cluster& c, const LatencyModel& lat, double bytes)
      : l_(l), c_(c), lat_(lat), s_(bytes) {
    // Steps that cross the fabric also cross its switches.
    const auto& m = l.domains;
    if (l.d() > 1) fabric_step_s_ = c.path(m[0][0], m[1][0]).switches * c.profile().fabric.switch_latency_s;
  }

  // NCCL's latency of a ring, tree or p2p call: the base, then per step the
  // NVLink or network latency (docs/nccl-model-constants.md §4). The network
  // steps also cross the fabric's switches.
  double steps_latency(Algorithm a, Protocol p, double intra_steps, double inter_steps) const {
    // With one rank per node NCCL charges network steps at the tree's latency.
    const Algorithm net_row = a == Algorithm::Ring && l_.k == 1 ? Algorithm::Tree : a;
    return lat_.base(a, p) + intra_steps * lat_.step(true, a, p) +
           inter_steps * (lat_.step(false, net_row, p) + fabric_step_s_);
  }

  // Ring: `nsteps` steps of which `inter_steps` cross the network; every rank
  // sends `per_rank` payload bytes.
  TransferPlan ring(Protocol p, double per_rank, double nsteps, double inter_steps,
                    bool all_reduce) const {
    TransferPlan plan{Algorithm::Ring, p, {}, 0};
    double latency = steps_latency(Algorithm::Ring, p, nsteps - inter_steps, inter_steps);
    // NCCL's "plateau effect of ring": multi-node Simple all-reduce latency × 1.4 (sm80+).
    if (all_reduce && l_.d() > 1 && p == Protocol::Simple) latency *= 1.4;
    plan.phases.push_back(
        {ring_flows(l_, per_rank * wire_factor(Algorithm::Ring, p), c_), Time::from_seconds(latency)});
    return plan;
  }

  // Chain inside each domain, double binary tree across: up and down.
  TransferPlan tree(Protocol p) const {
    TransferPlan plan{Algorithm::Tree, p, {}, 0};
    const double k = static_cast<double>(l_.k);
    const double w = wire_factor(Algorithm::Tree, p) / tree_correction(p, s_);
    std::vector<FlowSpec> flows = domain_ring_flows(l_, 2 * s_ * (k - 1) / k * w, c_);
    for (auto& f : cross_domain_flows(l_, 2 * s_ / k * w, c_)) flows.push_back(f);
    const double log_d = std::floor(std::log2(static_cast<double>(l_.d())));
    plan.phases.push_back(
        {std::move(flows), Time::from_seconds(steps_latency(Algorithm::Tree, p, 2 * (k - 1), 2 * log_d))});
    return plan;
  }

  // A rank's part of an NVLS reduction: S in and out through its own NVLink
  // ports, reduced in the switch, at the profile's NVLS rate.
  FlowSpec nvls_flow(Rank r) const {
    const auto& hw = c_.profile();
    FlowSpec f{r, r, s_, {}, hw.nvlink.bandwidth_bytes_per_s * *hw.nvlink.nvls_efficiency};
    f.path.links[f.path.num_links++] = c_.gpu_link(r, hardware::LinkKind::NvlinkOut);
    f.path.links[f.path.num_links++] = c_.gpu_link(r, hardware::LinkKind::NvlinkIn);
    return f;
  }

  TransferPlan nvls() const {
    TransferPlan plan{Algorithm::Nvls, Protocol::Simple, {}, 0};
    PhaseSpec phase;
    for (const Rank r : l_.domains[0]) phase.flows.push_back(nvls_flow(r));
    // NCCL: one NVLS operation costs hwLat[NVLINK][NVLS] and no base.
    phase.latency = Time::from_seconds(steps_latency(Algorithm::Nvls, Protocol::Simple, 1, 0));
    plan.phases.push_back(std::move(phase));
    return plan;
  }

  // NVLSTree (NCCL 2.18+): NVLink SHARP reduces inside each domain while a
  // tree of the domains reduces across them and NVLS multicasts the result
  // back; NCCL pipelines the parts chunk by chunk, so they share one phase.
  // Across domains each rank's NIC carries 2S/k each way, as the tree's
  // (double binary tree: interior in one tree, a leaf in the other), and
  // S/k between two domains, where the pair needs no tree (NCCL doubles
  // NVLSTree's inter-node bandwidth on two nodes, tuning.cc "Handle 2 node
  // case of NVLSTree"). The shard each NIC-facing rank reads from and writes
  // to the switch (S/k) is left out: 1/k of its NVLS traffic. Latency as
  // NCCL's: intra + 2·⌊log2 D⌋·inter, no base (tuning.cc v2.30.7-1 l. 427).
  TransferPlan nvls_tree() const {
    TransferPlan plan{Algorithm::NvlsTree, Protocol::Simple, {}, 0};
    PhaseSpec phase;
    for (const auto& m : l_.domains)
      for (const Rank r : m) phase.flows.push_back(nvls_flow(r));
    const double cross = (l_.d() == 2 ? 1.0 : 2.0) * s_ / static_cast<double>(l_.k);
    for (auto& f : cross_domain_flows(l_, cross, c_)) phase.flows.push_back(f);
    const double log_d = std::floor(std::log2(static_cast<double>(l_.d())));
    phase.latency = Time::from_seconds(steps_latency(Algorithm::NvlsTree, Protocol::Simple, 1, 2 * log_d));
    plan.phases.push_back(std::move(phase));
    return plan;
  }

  // Reduce-scatter inside domains, a cross-domain phase, all-gather inside.
  // Hierarchical runs ring phases with ring latencies; CollNet takes NCCL's
  // CollNetDirect latency, 2·(min(1, k−1)·intra + (k−1)·0.4 µs) + inter, as one.
  TransferPlan hierarchical(Algorithm a, double cross_bytes_per_rank, double cross_steps) const {
    TransferPlan plan{a, Protocol::Simple, {}, 0};
    const double k = static_cast<double>(l_.k);
    const bool collnet = a == Algorithm::CollNet;
    const double intra_step = lat_.step(true, Algorithm::Ring, Protocol::Simple);
    const Time first = Time::from_seconds(collnet ? 0 : lat_.base(a, Protocol::Simple) + (k - 1) * intra_step);
    plan.phases.push_back({domain_ring_flows(l_, (k - 1) / k * s_, c_), first});
    std::vector<FlowSpec> cross;
    double cross_latency = 0;
    if (collnet) {
      // SHARP: each rank's shard goes up to the switches once and comes back reduced.
      for (const auto& m : l_.domains)
        for (const Rank r : m) {
          FlowSpec f{r, r, cross_bytes_per_rank, {}, 0};
          f.path.links[f.path.num_links++] = c_.gpu_link(r, hardware::LinkKind::NicOut);
          f.path.links[f.path.num_links++] = c_.gpu_link(r, hardware::LinkKind::NicIn);
          cross.push_back(f);
        }
      cross_latency = 2 * (std::min(1.0, k - 1) * lat_.step(true, a, Protocol::Simple) + (k - 1) * 0.4e-6) +
                      lat_.step(false, a, Protocol::Simple) + fabric_step_s_;
    } else {
      cross = cross_domain_flows(l_, cross_bytes_per_rank, c_);
      cross_latency = cross_steps * (lat_.step(false, a, Protocol::Simple) + fabric_step_s_);
    }
    plan.phases.push_back({std::move(cross), Time::from_seconds(cross_latency)});
    plan.phases.push_back({domain_ring_flows(l_, (k - 1) / k * s_, c_),
                           Time::from_seconds(collnet ? 0 : (k - 1) * intra_step)});
    return plan;
  }

  // All-to-all (S/n to every peer), or a send from members[0] to members[1].
  TransferPlan direct(Protocol p, CollectiveKind kind, std::span<const Rank> members) const {
    TransferPlan plan{Algorithm::Direct, p, {}, 0};
    PhaseSpec phase;
    const double w = wire_factor(Algorithm::Direct, p);
    if (kind == CollectiveKind::PointToPoint) {
      phase.flows.push_back(flow(members[0], members[1], s_ * w, c_));
    } else {
      const double n = static_cast<double>(l_.n);
      const double k = static_cast<double>(l_.k);
      phase.flows = domain_ring_flows(l_, s_ * (k - 1) / n * w, c_);
      for (auto& f : cross_domain_flows(l_, s_ * (n - k) / n * w, c_)) phase.flows.push_back(f);
    }
    const bool nvlink = l_.d() == 1;
    phase.latency = Time::from_seconds(steps_latency(Algorithm::Direct, p, nvlink ? 1 : 0, nvlink ? 0 : 1));
    plan.phases.push_back(std::move(phase));
    return plan;
  }

  // expert_dispatch_plan's exchange: NVLink traffic per member and network
  // traffic per member (see collective_algorithms.hpp).
  // A cap of 0 leaves a part at its links' rate.
  TransferPlan dispatch(double nvlink_per_rank, double network_per_rank, double nvlink_cap, double network_cap) const {
    TransferPlan plan{Algorithm::Direct, Protocol::Simple, {}, 0};
    PhaseSpec phase;
    if (nvlink_per_rank > 0) phase.flows = domain_ring_flows(l_, nvlink_per_rank, c_);
    for (FlowSpec& f : phase.flows) f.max_rate = nvlink_cap;
    if (network_per_rank > 0)
      for (auto& f : cross_domain_flows(l_, network_per_rank, c_)) {
        f.max_rate = network_cap;
        phase.flows.push_back(f);
      }
    const bool nvlink = l_.d() == 1;
    phase.latency =
        Time::from_seconds(steps_latency(Algorithm::Direct, Protocol::Simple, nvlink ? 1 : 0, nvlink ? 0 : 1));
    plan.phases.push_back(std::move(phase));
    return plan;
  }

 private:
  const Layout& l_;
  const hardware::Cluster& c_;
  const LatencyModel& lat_;
  double s_;
  double fabric_step_s_ = 0;
};

}  // namespace

std::vector<TransferPlan> candidate_plans(CollectiveKind kind, std::uint64_t bytes,
                                          std::span<const Rank> members,
                                          const hardware::Cluster& cluster,
                                          const LatencyModel& latency) {
  PTSIM_ASSERT(!members.empty(), "a collective has members");
  std::vector<TransferPlan> plans;
  if (members.size() == 1) {
    plans.push_back({});
    return plans;
  }
  const Layout l = layout_of(members, cluster);
  const Planner p(l, cluster, latency, static_cast<double>(bytes));
  const double n = static_cast<double>(l.n);
  const double d = static_cast<double>(l.d());
  const double s = static_cast<double>(bytes);
  constexpr Protocol kProtocols[] = {Protocol::LL, Protocol::LL128, Protocol::Simple};
  const auto& hw = cluster.profile();
  switch (kind) {
    case CollectiveKind::AllReduce:
      for (const Protocol pr : kProtocols) {
        plans.push_back(p.ring(pr, 2 * (n - 1) / n * s, 2 * (n - 1), 2 * (d - 1), true));
        if (l.d() > 1) plans.push_back(p.tree(pr));
      }
      if (l.d() == 1 && hw.nvlink.nvls_efficiency) plans.push_back(p.nvls());
      // NVLSTree needs more than one domain and NVLink SHARP in each (NCCL
      // disables it on one node, tuning.cc l. 502). NCCL's multi-node NVLS
      // (NVLink SHARP with IB SHARP) needs CollNet and is not a candidate here.
      if (l.d() > 1 && l.k > 1 && hw.nvlink.nvls_efficiency) plans.push_back(p.nvls_tree());
      if (l.d() > 1 && l.k > 1)
        plans.push_back(p.hierarchical(Algorithm::Hierarchical,
                                       2 * (d - 1) / d * s / static_cast<double>(l.k), 2 * (d - 1)));
      // NCCL runs CollNet only when told to (NCCL_COLLNET_ENABLE=1) on a
      // fabric that offers SHARP: otherwise its tuner never considers it.
      if (l.d() > 1 && hw.fabric.in_network_reduction && hw.fabric.nccl_collnet_enable)
        plans.push_back(p.hierarchical(Algorithm::CollNet, s / static_cast<double>(l.k), 2));
      break;
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
      for (const Protocol pr : kProtocols) plans.push_back(p.ring(pr, (n - 1) / n * s, n - 1, d - 1, false));
      break;
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce:
      for (const Protocol pr : kProtocols) plans.push_back(p.ring(pr, s, n, d - 1, false));
      break;
    case CollectiveKind::AllToAll:
    case CollectiveKind::PointToPoint:
      PTSIM_ASSERT(kind != CollectiveKind::PointToPoint || members.size() == 2,
                   "a transfer has a sender and a receiver");
      for (const Protocol pr : {Protocol::LL, Protocol::Simple}) plans.push_back(p.direct(pr, kind, members));
      break;
    case CollectiveKind::ExpertDispatch:
      PTSIM_ASSERT(false, "an expert dispatch is planned by expert_dispatch_plan, which knows its routing");
      break;
    case CollectiveKind::None: PTSIM_ASSERT(false, "communication task without a collective kind");
  }
  for (auto& plan : plans) plan.estimated_s = plan_seconds(plan, cluster);
  return plans;
}

TransferPlan expert_dispatch_plan(std::uint64_t bytes, int topk, int experts, std::span<const Rank> members,
                                  const hardware::Cluster& cluster, const LatencyModel& latency,
                                  taskgraph::ExchangeLibrary library, bool combine) {
  PTSIM_ASSERT(!members.empty() && topk >= 1 && topk <= experts, "a dispatch routes each token to 1..E experts");
  if (members.size() == 1) return {};
  const Layout l = layout_of(members, cluster);
  const double n = static_cast<double>(l.n), d = static_cast<double>(l.d()), k = static_cast<double>(l.k);
  const double E = static_cast<double>(experts);
  // The chance that `held` of the E experts hold none of a token's topk:
  // C(E − held, topk) / C(E, topk), as a product.
  const auto misses = [&](double held) {
    double p = 1;
    for (int i = 0; i < topk; ++i) p *= std::max(0.0, (E - held - i) / (E - i));
    return p;
  };
  const double per_member = E / n;
  const double p_rank = 1 - misses(per_member);
  const double p_domain = 1 - misses(per_member * k);
  const double s = static_cast<double>(bytes);
  // NVLink: to each domain peer, for the member's own tokens and for those
  // it relays from each other domain; network: to each other domain.
  const double nvlink = s * p_rank * (k - 1) * d;
  const double network = s * p_domain * (d - 1);
  const Planner p(l, cluster, latency, s);
  const auto& nvl = cluster.profile().nvlink;
  const bool hybridep = library == taskgraph::ExchangeLibrary::HybridEP;
  const auto& measured = hybridep ? nvl.hybridep : nvl.deepep;
  const double nvlink_cap = measured && l.k > 1 ? nvlink_cap_of_exchange(*measured, k, combine) : 0;
  // Across domains only HybridEP's exchange is measured (network.nic.hybridep).
  const auto& across = cluster.profile().nic.hybridep;
  const double network_cap = hybridep && across && l.d() > 1 ? network_cap_of_exchange(*across, d, combine) : 0;
  TransferPlan plan = p.dispatch(nvlink, network, nvlink_cap, network_cap);
  plan.estimated_s = plan_seconds(plan, cluster);
  return plan;
}

TransferPlan choose_plan(CollectiveKind kind, std::uint64_t bytes, std::span<const Rank> members,
                         const hardware::Cluster& cluster, const LatencyModel& latency) {
  auto plans = candidate_plans(kind, bytes, members, cluster, latency);
  // Lowest estimate wins; ties keep the earlier candidate (deterministic).
  auto best = std::min_element(plans.begin(), plans.end(), [](const TransferPlan& a, const TransferPlan& b) {
    return a.estimated_s < b.estimated_s;
  });
  return std::move(*best);
}

}  // namespace ptsim::cost

// Max-min fair sharing of links between flows (see flow_network.hpp).
//
// Rates follow progressive filling (Bertsekas & Gallager, Data Networks,
// §6.5.2): raise every flow's rate together; when a link fills, the flows on
// it keep that rate; repeat with the rest. A flow of weight w on a shared link
// uses w times its rate there.
#include "internal/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "ptsim/common/error.hpp"

namespace ptsim::engine::internal {

namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();
}

FlowNetwork::FlowNetwork(std::vector<double> capacity, std::vector<bool> shared)
    : capacity_(std::move(capacity)), shared_(std::move(shared)), slot_(capacity_.size(), kNoSlot) {
  PTSIM_ASSERT(capacity_.size() == shared_.size(), "one sharing flag per link");
}

FlowNetwork::FlowNetwork(const cost::Links& links) : cluster_links_(links), slot_(links.count(), kNoSlot) {}

FlowNetwork::Slot FlowNetwork::slot_of(cost::LinkId link) {
  PTSIM_ASSERT(link < slot_.size(), "a link of the network");
  Slot& s = slot_[link];
  if (s != kNoSlot) return s;
  s = static_cast<Slot>(links_.size());
  Link& l = links_.emplace_back();
  l.capacity = capacity_of(link);
  l.shared = shared_of(link);
  residual_.push_back(0);
  unfrozen_weight_.push_back(0);
  link_pos_.push_back(0);
  dirty_mark_.push_back(0);
  stamp_.push_back(0);
  pending_mark_.push_back(0);
  return s;
}

void FlowNetwork::request_rebalance(std::span<const Slot> seeds, Time now) {
  if (!defer_) {
    rebalance(seeds, now);
    return;
  }
  for (const auto l : seeds)
    if (pending_mark_[l] == 0) {
      pending_mark_[l] = 1;
      pending_.push_back(l);
    }
}

void FlowNetwork::flush(Time now) {
  if (pending_.empty()) return;
  flushing_.swap(pending_);
  pending_.clear();
  for (const auto l : flushing_) pending_mark_[l] = 0;
  rebalance(flushing_, now);
}

void FlowNetwork::settle(Flow& f, Time now) {
  f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.last).seconds());
  f.last = now;
}

void FlowNetwork::set_rate(FlowId id, double rate, Time now) {
  Flow& f = flows_[id];
  if (f.rate == rate) return;
  settle(f, now);
  f.rate = rate;
  ++f.version;
  changed_.push_back(id);
}

FlowId FlowNetwork::add(Time now, double bytes, std::span<const cost::LinkId> links,
                        double max_rate, double weight, std::uint32_t owner) {
  PTSIM_ASSERT(links.size() <= 4, "a path crosses at most four links");
  FlowId id;
  if (free_.empty()) {
    id = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
    frozen_.push_back(0);
  } else {
    id = free_.back();
    free_.pop_back();
  }
  Flow& f = flows_[id];
  const std::uint32_t version = f.version + 1;
  f = Flow{};
  f.remaining = bytes;
  f.max_rate = max_rate;
  f.weight = weight;
  f.last = now;
  f.owner = owner;
  f.version = version;
  f.active = true;
  f.num_links = static_cast<std::uint8_t>(links.size());
  bool alone = true;
  for (std::size_t i = 0; i < links.size(); ++i) {
    const Slot s = slot_of(links[i]);
    Link& l = links_[s];
    alone = alone && l.flows.empty();
    f.links[i] = s;
    f.slot[i] = static_cast<std::uint32_t>(l.flows.size());
    l.flows.push_back(id);
  }
  last_add_alone_ = alone;
  if (alone) {
    // Nothing else on its links: no other rate can change.
    f.rate = rate_alone(links, max_rate, weight);
    changed_.push_back(id);
  } else {
    request_rebalance({f.links.data(), f.num_links}, now);
  }
  return id;
}

void FlowNetwork::remove(FlowId id, Time now) {
  Flow& f = flows_[id];
  PTSIM_ASSERT(f.active, "a flow ends once");
  f.active = false;
  bool others = false;
  for (std::size_t i = 0; i < f.num_links; ++i) {
    Link& l = links_[f.links[i]];
    const FlowId moved = l.flows.back();
    l.flows[f.slot[i]] = moved;
    l.flows.pop_back();
    if (moved != id) {
      Flow& m = flows_[moved];
      for (std::size_t j = 0; j < m.num_links; ++j)
        if (m.links[j] == f.links[i]) m.slot[j] = f.slot[i];
    }
    others = others || !l.flows.empty();
  }
  ++f.version;
  free_.push_back(id);
  if (others) request_rebalance({f.links.data(), f.num_links}, now);
}

double FlowNetwork::rate_alone(std::span<const cost::LinkId> links, double max_rate,
                               double weight) const {
  double rate = max_rate > 0 ? max_rate : kInfinity;
  for (const auto id : links) rate = std::min(rate, capacity_of(id) / weight_on(weight, shared_of(id)));
  return rate;
}

Time FlowNetwork::time_to_send(double bytes, double rate) {
  if (bytes <= 0) return Time{};
  if (rate <= 0) return Time::max();
  return Time::from_seconds(bytes / rate);
}

Time FlowNetwork::finish_time(FlowId id) const {
  const Flow& f = flows_[id];
  const Time left = time_to_send(f.remaining, f.rate);
  return left == Time::max() ? left : f.last + left;
}

void FlowNetwork::rebalance(std::span<const Slot> seeds, Time now) {
  // The component: every flow and link reachable from the seeds.
  ++search_;
  comp_links_.clear();
  comp_flows_.clear();
  for (const auto l : seeds)
    if (links_[l].mark != search_) {
      links_[l].mark = search_;
      comp_links_.push_back(l);
    }
  for (std::size_t i = 0; i < comp_links_.size(); ++i) {
    for (const FlowId fid : links_[comp_links_[i]].flows) {
      if (frozen_[fid] == 2) continue;  // already in the component
      frozen_[fid] = 2;
      comp_flows_.push_back(fid);
      const Flow& f = flows_[fid];
      for (std::size_t j = 0; j < f.num_links; ++j)
        if (links_[f.links[j]].mark != search_) {
          links_[f.links[j]].mark = search_;
          comp_links_.push_back(f.links[j]);
        }
    }
  }
  for (const auto l : comp_links_) {
    residual_[l] = links_[l].capacity;
    unfrozen_weight_[l] = 0;
  }
  for (const FlowId fid : comp_flows_) {
    frozen_[fid] = 0;
    const Flow& f = flows_[fid];
    for (std::size_t j = 0; j < f.num_links; ++j)
      unfrozen_weight_[f.links[j]] += weight_on(f.weight, links_[f.links[j]]);
  }

  // Progressive filling. Each round the tightest constraint wins: the link
  // with the least fair share left (the first such link of comp_links_ on a
  // tie), unless a flow's own cap is lower still (the first such flow of
  // comp_flows_). A lazy min-heap keyed (share, position) finds the link and a
  // sorted list the cap, so a round costs a logarithm, not a scan of the
  // component: components of thousands of flows meet on oversubscribed pod
  // links. The rounds and their floating-point operations are those of a
  // plain scan, so the rates are bit for bit the same.
  share_heap_.clear();
  for (std::uint32_t i = 0; i < comp_links_.size(); ++i) {
    const auto l = comp_links_[i];
    link_pos_[l] = i;
    ++stamp_[l];
    if (unfrozen_weight_[l] > 1e-12) share_heap_.push_back({residual_[l] / unfrozen_weight_[l], i, stamp_[l]});
  }
  std::make_heap(share_heap_.begin(), share_heap_.end(), std::greater<>{});
  caps_.clear();
  for (std::uint32_t i = 0; i < comp_flows_.size(); ++i)
    if (flows_[comp_flows_[i]].max_rate > 0) caps_.push_back({flows_[comp_flows_[i]].max_rate, i});
  std::sort(caps_.begin(), caps_.end());
  std::size_t next_cap = 0;

  auto freeze = [&](FlowId fid, double rate) {
    frozen_[fid] = 1;
    const Flow& f = flows_[fid];
    for (std::size_t j = 0; j < f.num_links; ++j) {
      const auto l = f.links[j];
      const double w = weight_on(f.weight, links_[l]);
      residual_[l] = std::max(0.0, residual_[l] - rate * w);
      unfrozen_weight_[l] -= w;
      if (dirty_mark_[l] != search_) {
        dirty_mark_[l] = search_;
        dirty_.push_back(l);
      }
    }
    set_rate(fid, rate, now);
  };
  // A round's changed shares enter the heap once per link, after the round
  // (a link crossed by a thousand flows frozen together changes a thousand times).
  auto flush = [&] {
    for (const auto l : dirty_) {
      dirty_mark_[l] = 0;
      ++stamp_[l];
      if (unfrozen_weight_[l] > 1e-12) {
        share_heap_.push_back({residual_[l] / unfrozen_weight_[l], link_pos_[l], stamp_[l]});
        std::push_heap(share_heap_.begin(), share_heap_.end(), std::greater<>{});
      }
    }
    dirty_.clear();
  };

  std::size_t left = comp_flows_.size();
  while (left > 0) {
    while (!share_heap_.empty() && share_heap_.front().stamp != stamp_[comp_links_[share_heap_.front().position]]) {
      std::pop_heap(share_heap_.begin(), share_heap_.end(), std::greater<>{});
      share_heap_.pop_back();
    }
    while (next_cap < caps_.size() && frozen_[comp_flows_[caps_[next_cap].position]] != 0) ++next_cap;
    const double link_share = share_heap_.empty() ? kInfinity : share_heap_.front().share;
    const bool by_cap = next_cap < caps_.size() && caps_[next_cap].rate < link_share;
    PTSIM_ASSERT(by_cap || link_share < kInfinity, "every flow crosses a link with capacity");
    if (by_cap) {
      freeze(comp_flows_[caps_[next_cap].position], caps_[next_cap].rate);
      --left;
      flush();
      continue;
    }
    const auto best_link = comp_links_[share_heap_.front().position];
    for (const FlowId fid : links_[best_link].flows)
      if (frozen_[fid] == 0) {
        freeze(fid, link_share);
        --left;
      }
    flush();
  }
}

}  // namespace ptsim::engine::internal

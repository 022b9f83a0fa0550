// Max-min fair sharing of links between flows (see flow_network.hpp).
//
// Rates follow progressive filling (Bertsekas & Gallager, Data Networks,
// §6.5.2): raise every flow's rate together; when a link fills, the flows on
// it keep that rate; repeat with the rest. A flow of weight w on a shared link
// uses w times its rate there.
#include "internal/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ptsim/common/error.hpp"

namespace ptsim::engine::internal {

namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();
}

FlowNetwork::FlowNetwork(std::vector<double> capacity, std::vector<bool> shared) {
  PTSIM_ASSERT(capacity.size() == shared.size(), "one sharing flag per link");
  links_.resize(capacity.size());
  for (std::size_t i = 0; i < capacity.size(); ++i) {
    links_[i].capacity = capacity[i];
    links_[i].shared = shared[i];
  }
  residual_.resize(capacity.size());
  unfrozen_weight_.resize(capacity.size());
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

FlowId FlowNetwork::add(Time now, double bytes, std::span<const hardware::LinkId> links,
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
  double rate = max_rate > 0 ? max_rate : kInfinity;
  for (std::size_t i = 0; i < links.size(); ++i) {
    Link& l = links_[links[i]];
    alone = alone && l.flows.empty();
    rate = std::min(rate, l.capacity / weight_on(f, l));
    f.links[i] = links[i];
    f.slot[i] = static_cast<std::uint32_t>(l.flows.size());
    l.flows.push_back(id);
  }
  last_add_alone_ = alone;
  if (alone) {
    // Nothing else on its links: no other rate can change.
    f.rate = rate;
    changed_.push_back(id);
  } else {
    rebalance(links, now);
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
  if (others) rebalance({f.links.data(), f.num_links}, now);
}

Time FlowNetwork::finish_time(FlowId id) const {
  const Flow& f = flows_[id];
  if (f.remaining <= 0) return f.last;
  if (f.rate <= 0) return Time::max();
  return f.last + Time::from_seconds(f.remaining / f.rate);
}

void FlowNetwork::rebalance(std::span<const hardware::LinkId> seeds, Time now) {
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
      unfrozen_weight_[f.links[j]] += weight_on(f, links_[f.links[j]]);
  }

  auto freeze = [&](FlowId fid, double rate) {
    frozen_[fid] = 1;
    const Flow& f = flows_[fid];
    for (std::size_t j = 0; j < f.num_links; ++j) {
      const double w = weight_on(f, links_[f.links[j]]);
      residual_[f.links[j]] = std::max(0.0, residual_[f.links[j]] - rate * w);
      unfrozen_weight_[f.links[j]] -= w;
    }
    set_rate(fid, rate, now);
  };

  std::size_t left = comp_flows_.size();
  while (left > 0) {
    double best = kInfinity;
    hardware::LinkId best_link = 0;
    bool by_link = false;
    for (const auto l : comp_links_) {
      if (unfrozen_weight_[l] <= 1e-12) continue;
      const double share = residual_[l] / unfrozen_weight_[l];
      if (share < best) {
        best = share;
        best_link = l;
        by_link = true;
      }
    }
    FlowId capped = 0;
    for (const FlowId fid : comp_flows_)
      if (frozen_[fid] == 0 && flows_[fid].max_rate > 0 && flows_[fid].max_rate < best) {
        best = flows_[fid].max_rate;
        capped = fid;
        by_link = false;
      }
    PTSIM_ASSERT(best < kInfinity, "every flow crosses a link with capacity");
    if (!by_link) {
      freeze(capped, best);
      --left;
      continue;
    }
    for (const FlowId fid : links_[best_link].flows)
      if (frozen_[fid] == 0) {
        freeze(fid, best);
        --left;
      }
  }
}

}  // namespace ptsim::engine::internal

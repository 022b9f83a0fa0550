// FlowNetwork: transfers in flight as flows over links of fixed capacity,
// sharing each link max-min fairly (weighted), rates recomputed whenever a
// flow starts or ends — but only over the flows that share links, directly or
// through others, with the one that changed. Private to engine/.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ptsim/common/time.hpp"
#include "ptsim/cost/links.hpp"

namespace ptsim::engine::internal {

using FlowId = std::uint32_t;

class FlowNetwork {
 public:
  /// capacity in bytes/s per link; shared links weigh flows by their weight.
  FlowNetwork(std::vector<double> capacity, std::vector<bool> shared);
  /// The links of `links`, read from it as flows first cross them (the
  /// cluster behind it must outlive the network). A run touches the links of the ranks
  /// it simulates only: a symmetric run of 16,384 GPUs crosses a few dozen of
  /// their 65,536 links, and per-link state for all of them was most of its
  /// set-up time (page faults on memory it never used).
  explicit FlowNetwork(const cost::Links& links);

  /// Starts a flow of `bytes` over `links` at `now`. `max_rate` caps its rate
  /// (0: no cap); `weight` is how many identical flows it stands for on shared
  /// links (symmetric mode). The flows whose finish time changed, the new one
  /// included, are appended to changed().
  FlowId add(Time now, double bytes, std::span<const cost::LinkId> links, double max_rate,
             double weight, std::uint32_t owner);
  /// Ends a flow at `now`; flows that share its links speed up (changed()).
  void remove(FlowId id, Time now);

  /// From now on, add() and remove() only note which links need new rates
  /// (a flow that starts alone still gets its rate at once); flush() solves
  /// them together. Many flows that start or end at one instant (a thousand
  /// pipeline sends across a pod link) then cost one solution instead of one
  /// each. Rates are only read after a flush, and no time passes before it.
  void defer_rates() { defer_ = true; }
  /// Whether rates wait for flush().
  bool rates_pending() const { return !pending_.empty(); }
  /// Solves the rates of every flow connected to the links noted since the
  /// last flush; flows whose finish time changed go to changed().
  void flush(Time now);

  Time finish_time(FlowId id) const;
  /// The rate a flow gets with every link of its path to itself: the least
  /// of its cap and each link's capacity (over its weight on shared links).
  double rate_alone(std::span<const cost::LinkId> links, double max_rate, double weight) const;
  /// How long `bytes` take at `rate`, rounded as finish_time() rounds;
  /// Time::max() when the rate is zero.
  static Time time_to_send(double bytes, double rate);
  bool active(FlowId id) const { return flows_[id].active; }
  /// Whether the last add() found every link of its flow free, so that no
  /// other flow's rate changed.
  bool last_add_was_alone() const { return last_add_alone_; }
  std::uint32_t version(FlowId id) const { return flows_[id].version; }
  std::uint32_t owner(FlowId id) const { return flows_[id].owner; }
  std::vector<FlowId>& changed() { return changed_; }

 private:
  struct Flow {
    double remaining = 0;  // bytes at `last`
    double rate = 0;       // bytes/s
    double max_rate = 0;
    double weight = 1;
    Time last;
    std::uint32_t owner = 0;
    std::uint32_t version = 0;
    std::uint8_t num_links = 0;
    bool active = false;
    std::array<std::uint32_t, 4> links{};  // slots
    std::array<std::uint32_t, 4> slot{};   // index of this flow in each link's list
  };
  struct Link {
    double capacity = 0;
    bool shared = false;
    std::vector<FlowId> flows;
    std::uint32_t mark = 0;  // component search
  };
  // Links are numbered here in the order flows first cross them ("slots"):
  // every per-link array below is indexed by slot and grows with the links in
  // use, not with the cluster. Flow::links and the link lists hold slots.
  using Slot = std::uint32_t;
  static constexpr Slot kNoSlot = ~Slot{0};

  static double weight_on(double weight, bool shared) { return shared ? weight : 1.0; }
  static double weight_on(double weight, const Link& l) { return weight_on(weight, l.shared); }
  double capacity_of(cost::LinkId link) const {
    return cluster_links_ ? cluster_links_->capacity(link) : capacity_[link];
  }
  bool shared_of(cost::LinkId link) const {
    return cluster_links_ ? cluster_links_->is_shared(link) : static_cast<bool>(shared_[link]);
  }
  /// The slot of a cluster link, made on its first use.
  Slot slot_of(cost::LinkId link);
  void settle(Flow& f, Time now);
  void set_rate(FlowId id, double rate, Time now);
  /// Max-min fair rates over every flow connected to `seeds` through shared links.
  void rebalance(std::span<const Slot> seeds, Time now);

  // Where link capacities come from: the cluster's links, or the vectors given.
  std::optional<cost::Links> cluster_links_;
  std::vector<double> capacity_;
  std::vector<bool> shared_;
  std::vector<Slot> slot_;  // per cluster link: its slot, or kNoSlot

  std::vector<Flow> flows_;
  std::vector<FlowId> free_;
  std::vector<Link> links_;
  std::vector<FlowId> changed_;
  bool defer_ = false;
  std::vector<Slot> pending_;                // links whose flows wait for flush()
  std::vector<std::uint8_t> pending_mark_;   // per link: in pending_
  std::vector<Slot> flushing_;               // flush()'s copy of pending_
  /// Rebalances now, or notes the links for flush() when deferring.
  void request_rebalance(std::span<const Slot> seeds, Time now);
  std::uint32_t search_ = 0;
  bool last_add_alone_ = false;
  // Scratch of rebalance(), kept to avoid reallocating.
  std::vector<Slot> comp_links_;
  std::vector<FlowId> comp_flows_;
  std::vector<double> residual_;
  std::vector<double> unfrozen_weight_;
  std::vector<std::uint8_t> frozen_;
  struct LinkShare {
    double share;            // residual / unfrozen weight when pushed
    std::uint32_t position;  // in comp_links_ (ties go to the earlier link)
    std::uint32_t stamp;     // stale once the link's stamp moved on
    friend bool operator>(const LinkShare& a, const LinkShare& b) {
      return a.share != b.share ? a.share > b.share : a.position > b.position;
    }
  };
  struct Cap {
    double rate;
    std::uint32_t position;  // in comp_flows_ (ties go to the earlier flow)
    friend bool operator<(const Cap& a, const Cap& b) {
      return a.rate != b.rate ? a.rate < b.rate : a.position < b.position;
    }
  };
  std::vector<LinkShare> share_heap_;
  std::vector<Cap> caps_;
  std::vector<std::uint32_t> link_pos_;  // per link: its position in comp_links_
  std::vector<std::uint32_t> stamp_;     // per link: bumped whenever its share changes
  std::vector<std::uint32_t> dirty_mark_;  // per link: search_ while in dirty_
  std::vector<Slot> dirty_;                // links whose share changed this round
};

}  // namespace ptsim::engine::internal

// EventQueue: the future event set, ordered by (time, insertion order), so
// that events at equal times pop in the order they were pushed and every run
// is deterministic (ns-3's EventKey, OMNeT++'s insertCount).
//
// A radix heap (Ahuja, Mehlhorn, Orlin & Tarjan 1990): simulated time never
// runs backwards, so every pushed time is at least the last popped one, and
// an event can sit in the bucket of the highest bit in which its time differs
// from that last time. Push is an append; pop rescans only the lowest
// non-empty bucket, and an event moves down at most 64 times over its life.
// Every bucket stays in insertion order (a bucket is refilled only while
// empty, and appends come later), so equal times pop first-in first-out.
#pragma once

#include <array>
#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "ptsim/common/time.hpp"

namespace ptsim::engine {

struct Event {
  Time at;
  std::uint32_t target = 0;   // what finishes: a rank slot, a flow, a transfer
  std::uint32_t task = 0;     // the task that finishes (rank events)
  std::uint32_t version = 0;  // stale when its target has moved on since
  std::uint8_t kind = 0;      // interpreted by the simulator
  std::uint8_t stream = 0;    // interpreted by the simulator
};

class EventQueue {
 public:
  /// `event.at` must be non-negative and not before the time of the last
  /// event popped: the caller's clock never runs backwards. (Inline, with
  /// pop: they run once or twice per simulated task.)
  void push(const Event& event) {
    const auto key = static_cast<std::uint64_t>(event.at.ns());
    if (event.at.ns() < 0 || key < last_) reject(event);
    const int b = bucket_of(key);
    buckets_[static_cast<std::size_t>(b)].push_back(event);
    if (b > 0) {
      occupied_ |= std::uint64_t{1} << (b - 1);
      least_[static_cast<std::size_t>(b)] = std::min(least_[static_cast<std::size_t>(b)], key);
    }
    ++size_;
    ++pushed_;
  }
  /// Removes and returns the earliest event; the queue must not be empty.
  Event pop() {
    if (front_ == buckets_[0].size()) refill();
    --size_;
    return buckets_[0][front_++];
  }
  bool empty() const { return size_ == 0; }
  /// Whether another event is due at the time of the last one popped.
  bool more_now() const { return front_ < buckets_[0].size(); }
  std::size_t size() const { return size_; }
  std::uint64_t pushed() const { return pushed_; }

 private:
  static constexpr int kBuckets = 65;  // 0: times equal to last_; b ≥ 1: highest differing bit b − 1

  int bucket_of(std::uint64_t key) const { return key == last_ ? 0 : 64 - std::countl_zero(key ^ last_); }
  [[noreturn]] void reject(const Event& event) const;
  static std::array<std::uint64_t, kBuckets> filled_with_max() {
    std::array<std::uint64_t, kBuckets> a;
    a.fill(~std::uint64_t{0});
    return a;
  }
  /// Bucket 0 is drained: moves the lowest non-empty bucket down, its minimum
  /// into bucket 0. Fails on an empty queue.
  void refill();

  std::array<std::vector<Event>, kBuckets> buckets_;
  std::uint64_t occupied_ = 0;  // bit b − 1: bucket b ≥ 1 is not empty
  std::array<std::uint64_t, kBuckets> least_ = filled_with_max();  // earliest time in each bucket ≥ 1
  std::size_t front_ = 0;       // bucket 0 pops from here (first in, first out)
  std::uint64_t last_ = 0;      // time of the last popped event, in ns
  std::size_t size_ = 0;
  std::uint64_t pushed_ = 0;
};

}  // namespace ptsim::engine

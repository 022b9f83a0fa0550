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
//
// While it holds few events (a symmetric run simulates one rank per stage:
// a dozen pending events, where the heap refilled on nearly every pop and
// moved each event five times), the queue is a sorted array instead, latest
// first: a pop takes the last element, and a push shifts the events due
// before it one place. (Earliest first, a pop had to advance a head that
// the array then compacted, and a push shifted the later events; the
// symmetric GPT-3 step ran 1.8 % fewer instructions this way round.)
// The first time it would outgrow that array it becomes the radix heap for good.
#pragma once

#include <array>
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ptsim/common/time.hpp"

namespace ptsim::engine {

/// 16 bytes, so that the sorted array shifts, and the radix heap moves, one
/// 16-byte word per event: the target, the simulator's kind and the stream
/// share one 32-bit field. (A finishing task is its stream's head, so events
/// need not carry it.)
struct Event {
  static constexpr std::uint32_t kMaxTarget = (1u << 24) - 1;
  static constexpr std::uint32_t kMaxKind = 7;
  static constexpr std::uint32_t kMaxStream = 31;

  Time at;
  std::uint32_t packed = 0;   // target (bits 0–23), kind (24–26), stream (27–31)
  std::uint32_t version = 0;  // stale when its target has moved on since

  /// What finishes: `target` (a rank slot, a flow, a transfer: at most
  /// kMaxTarget, which whoever numbers them checks once with check_target),
  /// the simulator's `kind` (≤ kMaxKind) and `stream` (≤ kMaxStream).
  static Event make(Time at, std::uint32_t target, std::uint32_t version, std::uint8_t kind,
                    std::uint8_t stream = 0) {
    return {at, target | std::uint32_t{kind} << 24 | std::uint32_t{stream} << 27, version};
  }
  std::uint32_t target() const { return packed & kMaxTarget; }
  std::uint8_t kind() const { return static_cast<std::uint8_t>(packed >> 24 & kMaxKind); }
  std::uint8_t stream() const { return static_cast<std::uint8_t>(packed >> 27); }

  /// Throws SimulationError when `target` (`what`: "simulated ranks",
  /// "flows", …) does not fit an event.
  static void check_target(std::size_t target, const char* what) {
    if (target > kMaxTarget) too_many(target, what);
  }

 private:
  [[noreturn]] static void too_many(std::size_t target, const char* what);
};

class EventQueue {
 public:
  /// `event.at` must be non-negative and not before the time of the last
  /// event popped: the caller's clock never runs backwards. (Inline, with
  /// pop: they run once or twice per simulated task.)
  void push(const Event& event) {
    const auto key = static_cast<std::uint64_t>(event.at.ns());
    if (event.at.ns() < 0 || key < last_) reject(event);
    if (small_ && push_sorted(event)) return;
    push_heap(event, key);
  }
  /// Removes and returns the earliest event; the queue must not be empty.
  Event pop() {
    if (small_) {
      if (count_ == 0) pop_empty();
      --size_;
      const Event e = sorted_[--count_];
      last_ = static_cast<std::uint64_t>(e.at.ns());
      return e;
    }
    if (front_ == buckets_[0].size()) refill();
    --size_;
    return buckets_[0][front_++];
  }
  bool empty() const { return size_ == 0; }
  /// Whether another event is due at the time of the last one popped.
  bool more_now() const {
    return small_ ? count_ > 0 && static_cast<std::uint64_t>(sorted_[count_ - 1].at.ns()) == last_
                  : front_ < buckets_[0].size();
  }
  std::size_t size() const { return size_; }
  std::uint64_t pushed() const { return pushed_; }

 private:
  static constexpr int kBuckets = 65;  // 0: times equal to last_; b ≥ 1: highest differing bit b − 1
  static constexpr std::size_t kSmall = 64;

  /// Inserts in front of (to pop after) every event not later than it:
  /// equal times stay first in, first out. False when the array is full: it
  /// has become the heap.
  bool push_sorted(const Event& event) {
    if (count_ == kSmall) {
      to_heap();
      return false;
    }
    std::size_t i = count_++;
    for (; i > 0 && sorted_[i - 1].at <= event.at; --i) sorted_[i] = sorted_[i - 1];
    sorted_[i] = event;
    ++size_;
    ++pushed_;
    return true;
  }
  /// Moves the kSmall events of the sorted array into the heap, for good.
  void to_heap();
  void push_heap(const Event& event, std::uint64_t key) {
    const int b = bucket_of(key);
    buckets_[static_cast<std::size_t>(b)].push_back(event);
    if (b > 0) {
      occupied_ |= std::uint64_t{1} << (b - 1);
      least_[static_cast<std::size_t>(b)] = std::min(least_[static_cast<std::size_t>(b)], key);
    }
    ++size_;
    ++pushed_;
  }

  int bucket_of(std::uint64_t key) const { return key == last_ ? 0 : 64 - std::countl_zero(key ^ last_); }
  [[noreturn]] void reject(const Event& event) const;
  [[noreturn]] static void pop_empty();
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
  bool small_ = true;                  // the sorted array is in use (see the top)
  std::array<Event, kSmall> sorted_;   // [0, count_): pending events, the next to pop last
  std::size_t count_ = 0;
  std::size_t front_ = 0;       // bucket 0 pops from here (first in, first out)
  std::uint64_t last_ = 0;      // time of the last popped event, in ns
  std::size_t size_ = 0;
  std::uint64_t pushed_ = 0;
};

}  // namespace ptsim::engine

// The future event set as a radix heap (see event_queue.hpp).
#include "ptsim/engine/event_queue.hpp"

#include <fmt/format.h>

#include <bit>

#include "ptsim/common/error.hpp"

namespace ptsim::engine {

namespace {
std::uint64_t key_of(const Event& e) { return static_cast<std::uint64_t>(e.at.ns()); }
}  // namespace

int EventQueue::bucket_of(std::uint64_t key) const {
  return key == last_ ? 0 : 64 - std::countl_zero(key ^ last_);
}

void EventQueue::push(const Event& event) {
  PTSIM_ASSERT(event.at.ns() >= 0 && key_of(event) >= last_,
               fmt::format("event at {} ns pushed after time {} ns was reached", event.at.ns(), last_));
  const int b = bucket_of(key_of(event));
  buckets_[static_cast<std::size_t>(b)].push_back(event);
  if (b > 0) occupied_ |= std::uint64_t{1} << (b - 1);
  ++size_;
  ++pushed_;
}

void EventQueue::refill() {
  auto& zero = buckets_[0];
  zero.clear();
  front_ = 0;
  const int b = std::countr_zero(occupied_) + 1;
  auto& source = buckets_[static_cast<std::size_t>(b)];
  std::uint64_t least = key_of(source.front());
  for (const Event& e : source) least = std::min(least, key_of(e));
  last_ = least;
  // Every bucket below b is empty, so each event lands behind none older than itself.
  for (const Event& e : source) {
    const int to = bucket_of(key_of(e));
    buckets_[static_cast<std::size_t>(to)].push_back(e);
    if (to > 0) occupied_ |= std::uint64_t{1} << (to - 1);
  }
  source.clear();
  occupied_ &= ~(std::uint64_t{1} << (b - 1));
}

Event EventQueue::pop() {
  PTSIM_ASSERT(size_ > 0, "pop from an empty event queue");
  if (front_ == buckets_[0].size()) refill();
  --size_;
  return buckets_[0][front_++];
}

}  // namespace ptsim::engine

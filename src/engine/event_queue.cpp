// The future event set as a radix heap (see event_queue.hpp).
#include "ptsim/engine/event_queue.hpp"

#include <fmt/format.h>


#include "ptsim/common/error.hpp"

namespace ptsim::engine {

namespace {
std::uint64_t key_of(const Event& e) { return static_cast<std::uint64_t>(e.at.ns()); }
}  // namespace

void EventQueue::reject(const Event& event) const {
  fail_invariant("event time not before the time reached", __FILE__, __LINE__,
                 fmt::format("event at {} ns pushed after time {} ns was reached", event.at.ns(), last_));
}

void Event::too_many(std::size_t target, const char* what) {
  throw SimulationError(fmt::format("the simulation needs more than {} {} at once (number {}), more "
                                    "than its events can name; simulate fewer ranks (--mode "
                                    "symmetric) or a smaller job",
                                    std::size_t{kMaxTarget} + 1, what, target));
}

void EventQueue::pop_empty() { fail_invariant("pop from an empty event queue", __FILE__, __LINE__, ""); }

void EventQueue::to_heap() {
  // In (time, insertion) order, so that the buckets keep it.
  small_ = false;
  for (std::size_t i = count_; i-- > 0;) {
    push_heap(sorted_[i], key_of(sorted_[i]));
    --size_;  // push_heap counts it again
    --pushed_;
  }
  count_ = 0;
}

void EventQueue::refill() {
  PTSIM_ASSERT(occupied_ != 0, "pop from an empty event queue");
  auto& zero = buckets_[0];
  zero.clear();
  front_ = 0;
  const int b = std::countr_zero(occupied_) + 1;
  auto& source = buckets_[static_cast<std::size_t>(b)];
  last_ = least_[static_cast<std::size_t>(b)];
  least_[static_cast<std::size_t>(b)] = ~std::uint64_t{0};
  occupied_ &= ~(std::uint64_t{1} << (b - 1));
  // Every bucket below b is empty, so each event lands behind none older than itself.
  for (const Event& e : source) {
    const std::uint64_t key = key_of(e);
    const int to = bucket_of(key);
    buckets_[static_cast<std::size_t>(to)].push_back(e);
    if (to > 0) {
      occupied_ |= std::uint64_t{1} << (to - 1);
      least_[static_cast<std::size_t>(to)] = std::min(least_[static_cast<std::size_t>(to)], key);
    }
  }
  source.clear();
}

}  // namespace ptsim::engine

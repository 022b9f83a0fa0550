// Binary-heap future event set (see event_queue.hpp).
#include "ptsim/engine/event_queue.hpp"

#include <algorithm>

#include "ptsim/common/error.hpp"

namespace ptsim::engine {

namespace {
// std heaps keep the largest on top; "later" is larger so the earliest pops first.
bool later(const Event& a, const Event& b) {
  if (a.at != b.at) return a.at > b.at;
  return a.sequence > b.sequence;
}
}  // namespace

void EventQueue::push(Event event) {
  event.sequence = next_sequence_++;
  heap_.push_back(event);
  std::push_heap(heap_.begin(), heap_.end(), later);
}

Event EventQueue::pop() {
  PTSIM_ASSERT(!heap_.empty(), "pop from an empty event queue");
  std::pop_heap(heap_.begin(), heap_.end(), later);
  const Event e = heap_.back();
  heap_.pop_back();
  return e;
}

}  // namespace ptsim::engine

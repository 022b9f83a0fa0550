// The future event set (see event_queue.hpp): a 4-ary min-heap on (time,
// sequence). Four children per node halve the depth of a binary heap, and a
// node's children share a cache line or two, which is what pop spends its
// time on when thousands of ranks keep events in flight.
#include "ptsim/engine/event_queue.hpp"

#include "ptsim/common/error.hpp"

namespace ptsim::engine {

namespace {

constexpr std::size_t kArity = 4;

bool earlier(const Event& a, const Event& b) {
  if (a.at != b.at) return a.at < b.at;
  return a.sequence < b.sequence;
}

}  // namespace

void EventQueue::push(Event event) {
  event.sequence = next_sequence_++;
  std::size_t i = heap_.size();
  heap_.push_back(event);
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!earlier(event, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = event;
}

Event EventQueue::pop() {
  PTSIM_ASSERT(!heap_.empty(), "pop from an empty event queue");
  const Event top = heap_.front();
  const Event last = heap_.back();
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n == 0) return top;
  std::size_t i = 0;
  while (true) {
    const std::size_t first = i * kArity + 1;
    if (first >= n) break;
    std::size_t best = first;
    const std::size_t end = first + kArity < n ? first + kArity : n;
    for (std::size_t c = first + 1; c < end; ++c)
      if (earlier(heap_[c], heap_[best])) best = c;
    if (!earlier(heap_[best], last)) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = last;
  return top;
}

}  // namespace ptsim::engine

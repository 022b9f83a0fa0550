// EventQueue: the future event set — a 4-ary heap ordered by (time, insertion
// sequence), so that events at equal times pop in the order they were pushed
// and every run is deterministic (ns-3's EventKey, OMNeT++'s insertCount).
#pragma once

#include <cstdint>
#include <vector>

#include "ptsim/common/time.hpp"

namespace ptsim::engine {

struct Event {
  Time at;
  std::uint64_t sequence = 0;  // assigned by the queue
  std::uint32_t target = 0;    // what finishes: a rank slot, a flow, a transfer
  std::uint32_t task = 0;      // the task that finishes (rank events)
  std::uint32_t version = 0;   // stale when its target has moved on since
  std::uint8_t kind = 0;       // interpreted by the simulator
};

class EventQueue {
 public:
  void push(Event event);
  /// Removes and returns the earliest event; the queue must not be empty.
  Event pop();
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  std::uint64_t pushed() const { return next_sequence_; }

 private:
  std::vector<Event> heap_;
  std::uint64_t next_sequence_ = 0;
};

}  // namespace ptsim::engine

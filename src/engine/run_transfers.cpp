// Run's communication (see run.hpp): members meet on their communicator,
// then the transfer's phases run as flows on shared links — or, where no
// other traffic can reach them, as one event for a time known in advance.
#include <fmt/format.h>

#include <algorithm>

#include "internal/blocked_report.hpp"
#include "internal/run.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::engine::internal {

// Rank `local` reaches communication task `task`, the head of its stream s:
// rendezvous with the other members.
void Run::arrive(std::uint32_t local, std::uint8_t s, const Task& task, Time now) {
  RankState& r = state_.ranks[local];
  const taskgraph::CommunicatorId id = w_.communicator(r.rank, task.comm_slot);
  if (id == taskgraph::kNoCommunicator)
    throw SimulationError(
        fmt::format("rank {}: task '{}' uses communicator slot '{}', which "
                    "this rank has no communicator for",
                    r.rank, w_.op_names[task.name], w_.comm_slot_names[task.comm_slot]));
  CommState& c = state_.comms[id];
  if (c.expected == 1 && (compute_mask_ >> s & 1u) == 0) {
    // The only simulated member (a TP group in symmetric mode): no
    // rendezvous, and when every phase runs alone, no transfer either — its
    // end is known now: an event like a kernel's (only compute streams are
    // repriced, so this stream's version moves only here).
    const PlannedTransfer& planned = plans_.get(id, task);
    if (!planned.rest_alone.empty() && planned.rest_alone[0]) {
      begin(local, s, task, planned.compute_slowdown, now);
      auto& stream = state_.stream(local, s);
      ++stream.version;
      queue_.push(Event::make(now + *planned.rest_alone[0], local, stream.version, kKernelDone, s));
      return;
    }
  }
  if (c.first == nullptr) {
    c.first = &task;
  } else {
    check_matching(*c.first, task, w_, r.rank, id);
  }
  state_.stream(local, s).waiting = true;
  c.arrivals.push_back({local, s});
  if (c.arrivals.size() < c.expected) return;
  const PlannedTransfer& planned = plans_.get(id, task);
  for (const Arrival& a : c.arrivals) {
    const StreamState& member = state_.stream(a.local, a.stream);
    begin(a.local, a.stream, *RunState::head_template(state_.ranks[a.local], member).task, planned.compute_slowdown,
          now);
  }
  start_transfer(id, planned, now);
}

// In symmetric mode each simulated member stands for `represents` ranks;
// a communicator's flows carry their share of that on shared links.
std::vector<double> Run::flow_weights() const {
  std::vector<double> weights(w_.communicators.size());
  for (std::size_t id = 0; id < weights.size(); ++id)
    weights[id] = options_.represents * static_cast<double>(state_.comms[id].expected) /
                  static_cast<double>(w_.communicators[id].members.size());
  return weights;
}

void Run::start_transfer(taskgraph::CommunicatorId id, const PlannedTransfer& planned, Time now) {
  std::uint32_t t;
  if (free_transfers_.empty()) {
    Event::check_target(transfers_.size(), "collectives and transfers in flight");
    t = static_cast<std::uint32_t>(transfers_.size());
    transfers_.emplace_back();
  } else {
    t = free_transfers_.back();
    free_transfers_.pop_back();
  }
  TransferState& x = transfers_[t];
  std::vector<std::uint32_t> flows = std::move(x.flows);  // keep its buffer: no allocation per transfer
  x = TransferState{};
  x.flows = std::move(flows);
  x.communicator = id;
  x.planned = &planned;
  x.plan = x.planned->plan.get();
  x.weight = plans_.weight(id);
  x.phase = 0;
  start_phase(t, now);
}

void Run::start_phase(std::uint32_t t, Time now) {
  TransferState& x = transfers_[t];
  if (x.phase >= x.plan->phases.size()) {
    finish_transfer(t, now);
    return;
  }
  const cost::PhaseSpec& phase = x.plan->phases[x.phase];
  x.flows_left = phase.flows.size();
  x.flows.clear();
  // Links no other traffic can reach: the phase's time is known, and its
  // flows need not enter the network (batch_done finds none to remove).
  if (const std::optional<Time> rest = x.planned->rest_alone[x.phase]) {
    // This phase and every later one alone: one event for the transfer's end.
    ++x.version;
    queue_.push(Event::make(now + *rest, t, x.version, kTransferDone));
    return;
  }
  if (const std::optional<Time> alone = x.planned->alone[x.phase]) {
    x.batched = true;
    ++x.version;
    queue_.push(Event::make(now + *alone, t, x.version, kBatchDone));
    return;
  }
  x.flows.reserve(phase.flows.size());
  bool alone = true;
  for (const cost::FlowSpec& f : phase.flows) {
    const FlowId id = network_.add(now, f.bytes, f.path.view(), f.max_rate, std::max(1.0, x.weight), t);
    Event::check_target(id, "flows");
    x.flows.push_back(id);
    alone = alone && network_.last_add_was_alone();
  }
  // Alone on their links, the flows keep their rates until another flow
  // joins a link: one event for the phase instead of one per flow.
  x.batched = alone && !x.flows.empty();
  if (x.batched) {
    Time end = now;
    for (const auto f : x.flows) end = std::max(end, network_.finish_time(f));
    ++x.version;
    queue_.push(Event::make(end, t, x.version, kBatchDone));
    network_.changed().clear();  // only its own flows, each alone on its links
  }
  reschedule_flows(now);
  if (x.flows_left == 0) end_phase(t, now);
}

// A batched phase's flows are all done.
void Run::batch_done(std::uint32_t t, Time now) {
  for (const auto f : transfers_[t].flows) network_.remove(f, now);
  transfers_[t].flows_left = 0;
  reschedule_flows(now);
  end_phase(t, now);
}

// Another flow changed the rate of one of t's batched flows: from now on
// each of its flows has its own finish event. A flow of the phase that has
// already delivered its bytes ends now: its finish time lies in the past,
// and time must not run backwards.
void Run::unbatch(std::uint32_t t, Time now) {
  TransferState& x = transfers_[t];
  x.batched = false;
  ++x.version;
  for (const auto f : x.flows)
    if (network_.active(f))
      queue_.push(Event::make(std::max(now, network_.finish_time(f)), f, network_.version(f), kFlowDone));
}

// A phase's flows are done: its latency, then the next phase.
void Run::end_phase(std::uint32_t t, Time now) {
  const Time latency = transfers_[t].plan->phases[transfers_[t].phase].latency;
  if (latency == Time{}) {
    next_phase(t, now);
  } else {
    queue_.push(Event::make(now + latency, t, 0, kPhaseDone));
  }
}

void Run::reschedule_flows(Time now) {
  // Unbatching pushes events itself, and may run while we walk the list.
  auto& changed = network_.changed();
  for (std::size_t i = 0; i < changed.size(); ++i) {
    const FlowId f = changed[i];
    if (!network_.active(f)) continue;
    const std::uint32_t t = network_.owner(f);
    if (transfers_[t].batched) {
      unbatch(t, now);
      continue;
    }
    queue_.push(Event::make(network_.finish_time(f), f, network_.version(f), kFlowDone));
  }
  changed.clear();
}

void Run::flow_done(FlowId f, Time now) {
  const std::uint32_t t = network_.owner(f);
  network_.remove(f, now);
  reschedule_flows(now);
  if (--transfers_[t].flows_left == 0) end_phase(t, now);
}

void Run::next_phase(std::uint32_t t, Time now) {
  ++transfers_[t].phase;
  start_phase(t, now);
}

void Run::finish_transfer(std::uint32_t t, Time now) {
  CommState& c = state_.comms[transfers_[t].communicator];
  // Finishing the members may start the communicator's next operation, so
  // they are walked from a buffer of their own: a spare one whose capacity
  // goes to the communicator, so that no transfer allocates.
  std::vector<Arrival> arrivals;
  if (!spare_arrivals_.empty()) {
    arrivals = std::move(spare_arrivals_.back());
    spare_arrivals_.pop_back();
  }
  arrivals.swap(c.arrivals);
  c.first = nullptr;
  free_transfers_.push_back(t);
  for (const Arrival& a : arrivals) finish_task(a.local, a.stream, now);
  arrivals.clear();
  spare_arrivals_.push_back(std::move(arrivals));
}

}  // namespace ptsim::engine::internal

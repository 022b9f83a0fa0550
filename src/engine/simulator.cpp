// The simulation loop (see simulator.hpp): stream cursors, dependency checks,
// rendezvous on communicators, memory and occupancy accounting.
#include "ptsim/engine/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "internal/blocked_report.hpp"
#include "internal/compiled_program.hpp"
#include "internal/run_state.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/engine/event_queue.hpp"

namespace ptsim::engine {

using internal::CommState;
using internal::CompiledProgram;
using internal::RankState;
using taskgraph::Task;
using taskgraph::TaskId;
using taskgraph::TaskKind;

namespace {

constexpr std::uint8_t kTaskDone = 0;
constexpr std::uint8_t kCollectiveDone = 1;

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  // splitmix64 finaliser over an FNV-style accumulation: cheap and well spread.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  return h;
}

class Run {
 public:
  Run(const taskgraph::Workload& w, const cost::CostModel& cost, const RunOptions& options)
      : w_(w), cost_(cost), state_(w, cost, options) {}

  RunResult execute() {
    for (std::uint32_t local = 0; local < state_.ranks.size(); ++local)
      for (std::uint8_t s = 0; s < state_.num_streams; ++s) try_start(local, s, Time{});
    while (!queue_.empty()) {
      const Event e = queue_.pop();
      ++result_.events;
      if (e.kind == kTaskDone) {
        finish_task(e.target, e.task, e.at);
      } else {
        CommState& c = state_.comms[e.target];
        const auto arrivals = std::move(c.arrivals);
        c.arrivals.clear();
        c.first = nullptr;
        for (const auto& [local, task] : arrivals) finish_task(local, task, e.at);
      }
    }
    if (!state_.all_finished()) throw SimulationError(internal::describe_blocked(state_, w_));
    return state_.collect(std::move(result_));
  }

 private:
  // Starts the head task of stream s on rank `local` if it can start now.
  void try_start(std::uint32_t local, std::uint8_t s, Time now) {
    RankState& r = state_.ranks[local];
    auto& stream = state_.stream(local, s);
    if (stream.running || stream.waiting) return;
    const CompiledProgram& p = *r.program;
    if (stream.cursor >= p.stream_tasks[s].size()) return;
    const TaskId t = p.stream_tasks[s][stream.cursor];
    for (std::uint32_t i = p.pred_begin[t]; i < p.pred_begin[t + 1]; ++i)
      if (!r.is_done(p.preds[i])) return;
    const Task& task = p.tasks[t];
    if (task.kind == TaskKind::Compute) {
      begin(local, s, task, now);
      queue_.push({now + p.compute_duration[t], 0, local, t, kTaskDone});
      return;
    }
    arrive(local, s, t, now);
  }

  void begin(std::uint32_t local, std::uint8_t s, const Task& task, Time now) {
    RankState& r = state_.ranks[local];
    r.account(now);
    auto& stream = state_.stream(local, s);
    stream.running = true;
    stream.waiting = false;
    stream.started = now;
    r.busy_mask |= 1u << s;
    r.allocate(task.alloc_bytes, now);
  }

  // Rank `local` reaches communication task t: rendezvous with the other members.
  void arrive(std::uint32_t local, std::uint8_t s, TaskId t, Time now) {
    RankState& r = state_.ranks[local];
    const Task& task = r.program->tasks[t];
    const taskgraph::CommunicatorId id = w_.communicator(r.rank, task.comm_slot);
    if (id == taskgraph::kNoCommunicator)
      throw SimulationError(fmt::format("rank {}: task '{}' uses communicator slot '{}', which "
                                        "this rank has no communicator for",
                                        r.rank, w_.op_names[task.name],
                                        w_.comm_slot_names[task.comm_slot]));
    CommState& c = state_.comms[id];
    if (c.first == nullptr) {
      c.first = &task;
    } else {
      internal::check_matching(*c.first, task, w_, r.rank, id);
    }
    state_.stream(local, s).waiting = true;
    c.arrivals.emplace_back(local, t);
    if (c.arrivals.size() < c.expected) return;
    for (const auto& [member, member_task] : c.arrivals) {
      const RankState& m = state_.ranks[member];
      begin(member, m.program->tasks[member_task].stream, m.program->tasks[member_task], now);
    }
    const Time duration = cost_.communication_duration(task, w_.communicators[id]);
    queue_.push({now + duration, 0, id, 0, kCollectiveDone});
  }

  void finish_task(std::uint32_t local, TaskId t, Time now) {
    RankState& r = state_.ranks[local];
    const Task& task = r.program->tasks[t];
    const std::uint8_t s = task.stream;
    auto& stream = state_.stream(local, s);
    r.account(now);
    r.busy_mask &= ~(1u << s);
    r.mark_done(t);
    r.release(task.free_bytes, now);
    r.finish = std::max(r.finish, now);
    auto& totals = r.stats.categories[task.category];
    totals.busy += now - stream.started;
    totals.bytes += task.bytes;
    totals.flops += task.flops;
    ++totals.count;
    ++result_.tasks;
    result_.fingerprint = mix(mix(mix(result_.fingerprint, static_cast<std::uint64_t>(r.rank)), t),
                              static_cast<std::uint64_t>(now.ns()));
    if (r.record) result_.timeline.push_back({r.rank, t, stream.started, now});
    stream.running = false;
    ++stream.cursor;
    try_start(local, s, now);
    const CompiledProgram& p = *r.program;
    for (std::uint32_t i = p.succ_begin[t]; i < p.succ_begin[t + 1]; ++i) {
      const TaskId next = p.succs[i];
      const std::uint8_t ns = p.tasks[next].stream;
      if (ns != s && state_.stream(local, ns).cursor == p.position[next]) try_start(local, ns, now);
    }
  }

  const taskgraph::Workload& w_;
  const cost::CostModel& cost_;
  internal::RunState state_;
  EventQueue queue_;
  RunResult result_;
};

}  // namespace

Simulator::Simulator(const taskgraph::Workload& workload, const cost::CostModel& cost)
    : workload_(&workload), cost_(&cost) {}

RunResult Simulator::run(const RunOptions& options) const {
  Run run(*workload_, *cost_, options);
  return run.execute();
}

}  // namespace ptsim::engine

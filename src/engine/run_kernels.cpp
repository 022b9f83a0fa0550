// Run's streams and kernels (see run.hpp): a ready head starts when the host
// has issued it, kernels share the GPU with communication and each other,
// and a task's end frees its memory and wakes what waited for it.
#include <algorithm>
#include <bit>
#include <cmath>

#include "internal/blocked_report.hpp"
#include "internal/run.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::engine::internal {

using taskgraph::TaskKind;

namespace {

constexpr std::int64_t kExactInDouble = std::int64_t{1} << 53;  // whole numbers below it are exact doubles

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  // splitmix64 finaliser over an FNV-style accumulation: cheap and well spread.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  return h;
}

}  // namespace

RunResult Run::execute() {
  for (std::uint32_t local = 0; local < state_.ranks.size(); ++local)
    for (std::uint8_t s = 0; s < state_.num_streams; ++s) try_start(local, s, Time{});
  Time now{};
  for (;;) {
    // Flows that started or ended at this instant get their rates together
    // once nothing else is due now (see FlowNetwork::defer_rates).
    if (network_.rates_pending() && !queue_.more_now()) {
      network_.flush(now);
      reschedule_flows(now);
    }
    if (queue_.empty()) break;
    const Event e = queue_.pop();
    now = e.at;
    switch (e.kind()) {
      case kKernelDone:
        if (state_.stream(e.target(), e.stream()).version != e.version) continue;
        ++result_.events;
        finish_task(e.target(), e.stream(), e.at);
        break;
      case kFlowDone:
        if (network_.version(e.target()) != e.version) continue;
        ++result_.events;
        flow_done(e.target(), e.at);
        break;
      case kBatchDone:
        if (transfers_[e.target()].version != e.version) continue;
        ++result_.events;
        batch_done(e.target(), e.at);
        break;
      case kTransferDone:
        if (transfers_[e.target()].version != e.version) continue;
        ++result_.events;
        finish_transfer(e.target(), e.at);
        break;
      case kHostIssued:
        ++result_.events;
        host_issued(e.target(), e.stream(), e.at);
        break;
      default: ++result_.events; next_phase(e.target(), e.at);
    }
  }
  if (!state_.all_finished()) throw SimulationError(describe_blocked(state_, w_));
  // Every task of every simulated rank ran exactly once.
  for (const RankState& r : state_.ranks) result_.tasks += r.program->num_tasks();
  return state_.collect(std::move(result_));
}

// The template of the head task t of stream `st` on rank `r`, when every
// task it waits for is done; null otherwise. (The hot helpers take the
// rank's and the stream's state, looked up once per step, not indexes.)
inline const Run::Template* Run::ready_head(const RankState& r, const StreamState& st, TaskId& t) {
  if (st.cursor == st.end) return nullptr;
  t = st.head_id();
  const Template& tp = RunState::head_template(r, st);
  bool ready = true;
  r.program->for_each_pred(t, tp, [&](TaskId pred) { ready = ready && r.is_done(pred); });
  return ready ? &tp : nullptr;
}

// Starts the head task of stream s on rank `local` if it can start now.
inline void Run::try_start(std::uint32_t local, std::uint8_t s, Time now) {
  try_start(local, s, state_.ranks[local], state_.stream(local, s), now);
}

inline void Run::try_start(std::uint32_t local, std::uint8_t s, RankState& r, StreamState& stream, Time now) {
  if (stream.running || stream.waiting || stream.host_pending) return;
  TaskId t = 0;
  const Template* tp = ready_head(r, stream, t);
  if (tp == nullptr) return;
  if (host_issue_ && wait_for_host(local, s, r, stream, *tp, t, now)) return;
  if (tp->kind != TaskKind::Compute) {
    arrive(local, s, *tp->task, now);
    return;
  }
  stream.work_left_ns = static_cast<double>(tp->duration_ns) * r.gpu_factor;
  stream.last = now;
  start_kernel(local, s, r, stream, *tp, now);
}

// The host issues a rank's tasks one after the other in program order,
// each costing it the cost model's host time: a task cannot start before
// the host has issued it. After a task flagged kHostSync the host waits
// until every task up to it is done (torch.cuda.synchronize()), after one
// flagged kHostWaitsForTask until that task is (an event's synchronize),
// and then goes on: the tasks after it are issued that much later.
inline Time Run::host_release(const RankState& r, const StreamState& stream, const Template& tp) {
  return Time::nanoseconds(stream.host_base_ns + tp.host_ns + r.host_delay_ns);
}

// Whether the host has yet to pass a synchronization before task t.
inline bool Run::host_blocked(const RankState& r, TaskId t) {
  const auto& syncs = r.program->host_syncs;
  return r.next_sync < syncs.size() && syncs[r.next_sync].task < t;
}

// True when the ready head t (template tp) of stream s waits for the host:
// an event wakes the stream when the host has issued it, or, behind a
// synchronization, pass_host_syncs() does. (Time behind a synchronization
// is not host wait: the GPU is still busy or waits for something else.)
inline bool Run::wait_for_host(std::uint32_t local, std::uint8_t s, RankState& r, StreamState& stream,
                               const Template& tp, TaskId t, Time now) {
  if (host_blocked(r, t)) {
    stream.host_pending = true;
    r.sync_waiters |= 1u << s;
    return true;
  }
  const Time release = host_release(r, stream, tp);
  if (release <= now) return false;
  r.account(now);
  ++r.host_waits;
  stream.host_pending = true;
  queue_.push(Event::make(release, local, 0, kHostIssued, s));
  return true;
}

inline void Run::host_issued(std::uint32_t local, std::uint8_t s, Time now) {
  RankState& r = state_.ranks[local];
  StreamState& stream = state_.stream(local, s);
  r.account(now);
  --r.host_waits;
  stream.host_pending = false;
  try_start(local, s, r, stream, now);
}

// begin() for a kernel, with the usual case inline: a kernel alone on the
// GPU runs at full speed, or slowed by communication in flight; beside
// other kernels all of them are repriced.
inline void Run::start_kernel(std::uint32_t local, std::uint8_t s, RankState& r, StreamState& stream,
                              const Template& tp, Time now) {
  stream.running = true;
  stream.waiting = false;
  stream.started = now;
  r.account(now);
  const std::uint32_t bit = 1u << s;
  r.busy_mask |= bit;
  if (copy_mask_ & bit) {
    // A copy engine's transfer: its own speed, no kernel repriced.
    stream.speed = 1;
    schedule_started_kernel(local, s, r, stream, tp.duration_ns, now);
    r.allocate(tp.task->alloc_bytes, now);
    return;
  }
  const std::uint32_t kernels = r.busy_mask & compute_mask_;
  const double slowdown = comm_slowdown(local, r.busy_mask);
  if (kernels == bit) {
    // reprice()'s arithmetic for one kernel whose work was set just now.
    stream.speed = 1 / slowdown;
    schedule_started_kernel(local, s, r, stream, tp.duration_ns, now);
  } else {
    reprice(local, kernels, slowdown, now);
  }
  r.allocate(tp.task->alloc_bytes, now);
}

// A kernel that ran alone on the GPU is followed on its stream by a kernel
// that can start now: what set_busy(false) and then try_start would do,
// without the busy mask leaving and re-entering the stream's bit — the
// instant's zero time on the mask without it is registered as they would
// have. False (nothing done) otherwise.
inline bool Run::continue_kernel(std::uint32_t local, std::uint8_t s, RankState& r, StreamState& stream, Time now) {
  const std::uint32_t bit = 1u << s;
  if ((r.busy_mask & compute_mask_) != bit) return false;
  TaskId t = 0;
  const Template* tp = ready_head(r, stream, t);
  if (tp == nullptr || tp->kind != TaskKind::Compute) return false;
  if (host_issue_ && (host_blocked(r, t) || now < host_release(r, stream, *tp))) return false;
  r.account(now);
  r.note_mask(r.busy_mask & ~bit);
  stream.work_left_ns = static_cast<double>(tp->duration_ns) * r.gpu_factor;
  stream.last = now;
  stream.running = true;
  stream.started = now;
  stream.speed = 1 / comm_slowdown(local, r.busy_mask);
  schedule_started_kernel(local, s, r, stream, tp->duration_ns, now);
  r.allocate(tp->task->alloc_bytes, now);
  return true;
}

// A kernel of `duration_ns` that starts now: at full speed on a GPU of
// nominal speed it ends its duration from now. That is what schedule_kernel
// computes — ⌈d − 10⁻⁶⌉ is d for a whole number d of nanoseconds below
// 2⁵³, exact in a double — without its division and rounding.
inline void Run::schedule_started_kernel(std::uint32_t local, std::uint8_t s, const RankState& r, StreamState& stream,
                                         std::int64_t duration_ns, Time now) {
  if (stream.speed != 1 || r.gpu_factor != 1 || duration_ns >= kExactInDouble) {
    schedule_kernel(local, s, now);
    return;
  }
  ++stream.version;
  queue_.push(Event::make(now + Time::nanoseconds(duration_ns), local, stream.version, kKernelDone, s));
}

inline void Run::schedule_kernel(std::uint32_t local, std::uint8_t s, Time now) {
  auto& stream = state_.stream(local, s);
  ++stream.version;
  const Time left = Time::ceil_nanoseconds(std::max(0.0, stream.work_left_ns / stream.speed - 1e-6));
  queue_.push(Event::make(now + left, local, stream.version, kKernelDone, s));
}

// The factor by which the communication running on the streams of `busy`
// slows rank `local`'s kernels: the largest of theirs (1 with none). Most
// of the time one stream communicates, or none.
inline double Run::comm_slowdown(std::uint32_t local, std::uint32_t busy) const {
  std::uint32_t m = busy & comm_mask_;
  if (m == 0) return 1;
  double slowdown = state_.stream(local, static_cast<std::uint8_t>(std::countr_zero(m))).slows;
  for (m &= m - 1; m != 0; m &= m - 1)
    slowdown = std::max(slowdown, state_.stream(local, static_cast<std::uint8_t>(std::countr_zero(m))).slows);
  return slowdown;
}

// A stream starting or stopping changes the speed of the rank's running
// kernels: communication slows them by its factor, and kernels of several
// compute streams share the GPU equally.
inline void Run::set_busy(std::uint32_t local, std::uint8_t s, bool busy, Time now) {
  set_busy(local, s, state_.ranks[local], busy, now);
}

inline void Run::set_busy(std::uint32_t local, std::uint8_t s, RankState& r, bool busy, Time now) {
  r.account(now);
  const std::uint32_t bit = 1u << s;
  const std::uint32_t before = r.busy_mask;
  r.busy_mask = busy ? before | bit : before & ~bit;
  // The running kernels (a compute stream is busy exactly while its
  // kernel runs); with none, no speed can change.
  const std::uint32_t kernels = r.busy_mask & compute_mask_;
  if (kernels == 0) return;
  const double after = comm_slowdown(local, r.busy_mask);
  if (!(compute_mask_ & bit) && after == comm_slowdown(local, before)) return;
  reprice(local, kernels, after, now);
}

// Out of line: most busy changes return above, and inlining this (with
// the queue's push) made every call save and restore registers it needs.
void Run::reprice(std::uint32_t local, std::uint32_t kernels, double slowdown, Time now) {
  // Kernighan's count (a call to libgcc's popcount without -mpopcnt),
  // skipped for the usual single kernel.
  int running = 1;
  if ((kernels & (kernels - 1)) != 0)
    for (std::uint32_t m = kernels & (kernels - 1); m != 0; m &= m - 1) ++running;
  const double speed = 1 / slowdown / std::max(1.0, static_cast<double>(running));
  for (std::uint32_t m = kernels; m != 0; m &= m - 1) {
    const auto c = static_cast<std::uint8_t>(std::countr_zero(m));
    auto& kernel = state_.stream(local, c);
    kernel.work_left_ns =
        std::max(0.0, kernel.work_left_ns - static_cast<double>((now - kernel.last).ns()) * kernel.speed);
    kernel.last = now;
    kernel.speed = speed;
    schedule_kernel(local, c, now);
  }
}

void Run::begin(std::uint32_t local, std::uint8_t s, const Task& task, double slows, Time now) {
  RankState& r = state_.ranks[local];
  auto& stream = state_.stream(local, s);
  stream.running = true;
  stream.waiting = false;
  stream.started = now;
  stream.slows = slows;
  set_busy(local, s, true, now);
  r.allocate(task.alloc_bytes, now);
}

// The head task of stream s on rank `local` ends now.
void Run::finish_task(std::uint32_t local, std::uint8_t s, Time now) {
  RankState& r = state_.ranks[local];
  const CompiledProgram& p = *r.program;
  auto& stream = state_.stream(local, s);
  const TaskId t = stream.head_id();
  const std::uint32_t first_template = stream.first_template;  // advance() may enter the next instance
  const Template& tp = RunState::head_template(r, stream);
  const Task& task = *tp.task;
  // The host's issue of this task, for the recorded timeline: it ended at
  // the task's release (the host's delay behind synchronizations changes
  // only once this task is done) and took the task's share of its block's
  // host prefix.
  Time host_start, host_end;
  if (r.record && p.host_issue) {
    const std::int64_t before = tp.local > 0 ? p.templates[first_template + tp.local - 1].host_ns : 0;
    if (tp.host_ns > before) {
      host_end = host_release(r, stream, tp);
      host_start = host_end - Time::nanoseconds(tp.host_ns - before);
    }
  }
  stream.running = false;
  r.mark_done(t);
  const bool awaited = r.next_sync < p.host_syncs.size() && (t == r.undone || p.host_syncs[r.next_sync].task == t);
  const std::uint32_t woken = awaited ? pass_host_syncs(r, now) : 0;
  r.release(task.free_bytes, now);
  r.finish = std::max(r.finish, now);
  auto& totals = r.stats.categories[task.category];
  totals.busy += now - stream.started;
  totals.bytes += task.bytes;
  totals.flops += task.flops;
  ++totals.count;
  // A sum over tasks of a hash of (rank, task, finish time): it changes
  // when any task finishes at another time, and not when tasks that finish
  // at the same instant are processed in another order (which changes no
  // result). One hash round per task: three had been 7 % of a large run.
  result_.fingerprint += mix(0, (static_cast<std::uint64_t>(now.ns()) * 0x9e3779b97f4a7c15ULL) ^
                                    (static_cast<std::uint64_t>(r.rank) << 32 | t));
  if (r.record) result_.timeline.push_back({r.rank, t, stream.started, now, host_start, host_end});
  // The stream goes idle (set_busy) only when its next task does not
  // start at once as a kernel alone on the GPU; nothing above reads the
  // busy mask or pushes an event, so the order of events is unchanged.
  state_.advance(local, s, stream);
  if (!continue_kernel(local, s, r, stream, now)) {
    set_busy(local, s, r, false, now);
    try_start(local, s, r, stream, now);
  }
  p.for_each_succ(t, tp, first_template, [&](TaskId next, std::uint8_t ns) {
    if (ns == s) return;
    StreamState& other = state_.stream(local, ns);
    if (other.heads(next)) try_start(local, ns, r, other, now);
  });
  for (std::uint32_t m = woken; m != 0; m &= m - 1) {
    const auto c = static_cast<std::uint8_t>(std::countr_zero(m));
    StreamState& other = state_.stream(local, c);
    other.host_pending = false;
    try_start(local, c, r, other, now);
  }
}

// Task r.undone, or the task the next synchronization waits for alone, is
// done: moves r.undone past every done task and the host past every
// synchronization now satisfied (every task up to it done, or its task);
// it resumes now. Returns the streams to wake (those that waited for it to
// pass one).
inline std::uint32_t Run::pass_host_syncs(RankState& r, Time now) {
  const CompiledProgram& p = *r.program;
  while (r.undone < p.num_tasks() && r.is_done(r.undone)) ++r.undone;
  const auto satisfied = [&](const CompiledProgram::HostSync& sync) {
    return sync.whole_device ? sync.task < r.undone : r.is_done(sync.task);
  };
  bool passed = false;
  for (; r.next_sync < p.host_syncs.size() && satisfied(p.host_syncs[r.next_sync]); ++r.next_sync) {
    r.host_delay_ns = std::max(r.host_delay_ns, now.ns() - p.host_syncs[r.next_sync].host_ns);
    passed = true;
  }
  if (!passed) return 0;
  const std::uint32_t woken = r.sync_waiters;
  r.sync_waiters = 0;
  return woken;
}

}  // namespace ptsim::engine::internal

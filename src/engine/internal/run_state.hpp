// RunState: the mutable state of one simulation run — per simulated rank its
// stream cursors, finished tasks, memory and occupancy clocks; per
// communicator the members that have reached the pending operation. Private
// to engine/.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "internal/compiled_program.hpp"
#include "ptsim/cost/transfer_plan.hpp"
#include "ptsim/engine/run_result.hpp"
#include "ptsim/engine/simulator.hpp"
#include "ptsim/taskgraph/workload.hpp"

namespace ptsim::engine::internal {

struct StreamState {
  // The head task: its place in its instance's list of tasks on this stream
  // (block-local ids, read through to `end`), that instance's first global id,
  // and the instance's index in the program's stream_instances. cursor == end:
  // the stream has run all its tasks.
  const TaskId* cursor = nullptr;
  const TaskId* end = nullptr;
  TaskId base = 0;
  std::uint32_t instance_at = 0;
  std::uint32_t first_template = 0;  // of the instance's block: the head's template is this + *cursor
  std::int64_t host_base_ns = 0;     // host time to issue the instances before the head's
  bool running = false;      // a task is executing
  bool host_pending = false; // the head task is ready but the host has not issued it yet
  bool waiting = false;      // the head task waits for the other members of its communicator
  Time started;              // start of the running task
  // A running kernel: work left in full-speed nanoseconds as of `last`, and
  // its current speed (below 1 while communication shares the GPU).
  double work_left_ns = 0;
  double speed = 1;
  // A running communication task: the factor by which it slows the rank's
  // kernels (its plan's compute_slowdown), read while its stream is busy.
  double slows = 1;
  Time last;
  std::uint32_t version = 0;  // its pending finish event is stale when this moved on

  /// The global id of the head task (the stream must have one).
  TaskId head_id() const { return base + *cursor; }
  /// Whether `global` is the head task.
  bool heads(TaskId global) const { return cursor != end && head_id() == global; }
};

struct RankState {
  Rank rank = 0;
  const CompiledProgram* program = nullptr;
  std::vector<std::uint64_t> done;  // one bit per task
  std::uint64_t allocated = 0;      // base + live allocations, bytes
  std::uint32_t busy_mask = 0;      // bit s: stream s runs a task
  double gpu_factor = 1;            // kernels take this many times longer (stragglers)
  std::uint32_t host_waits = 0;     // streams whose ready head the host has yet to issue
  // Host synchronizations (CompiledProgram::host_syncs): the first one the
  // host has not passed; the time its waits so far add to the host times of
  // the tasks after the last one passed; the first task not done (every task
  // before it is); the streams whose ready head waits for the host to pass one.
  std::uint32_t next_sync = 0;
  std::int64_t host_delay_ns = 0;
  TaskId undone = 0;
  std::uint32_t sync_waiters = 0;
  Time last_change;                 // occupancy is accounted up to here
  Time finish;
  bool record = false;
  std::vector<MemorySample>* samples = nullptr;  // set when recorded
  RankStats stats;

  bool is_done(TaskId t) const { return (done[t >> 6] >> (t & 63)) & 1u; }
  void mark_done(TaskId t) { done[t >> 6] |= std::uint64_t{1} << (t & 63); }
  /// Time per busy mask so far, in an open-addressed table (a rank of 18
  /// streams sees dozens of masks; a scan of them on every busy change was a
  /// third of a run). Power-of-two size, at most half full.
  struct OccupancySlot {
    std::uint32_t mask = 0;
    bool used = false;
    Time time;
  };
  std::vector<OccupancySlot> occupancy;
  std::size_t occupancy_used = 0;
  int occupancy_bits = 0;
  // The slots of the last two masks charged: a stream that ends one task and
  // starts the next flips the mask between the same two values, and the
  // compare costs less than the probe. Cleared when the table grows.
  static constexpr std::size_t kNoSlot = ~std::size_t{0};
  std::array<std::uint32_t, 2> recent_mask{};
  std::array<std::size_t, 2> recent_slot{kNoSlot, kNoSlot};

  /// Charges the time since the last change to the current busy mask.
  void account(Time now) {
    const Time spent = now - last_change;
    last_change = now;
    if (host_waits != 0 && busy_mask == 0) stats.host_wait += spent;
    for (std::size_t k = 0; k < 2; ++k)
      if (recent_slot[k] != kNoSlot && recent_mask[k] == busy_mask) {
        occupancy[recent_slot[k]].time += spent;
        return;
      }
    if (!occupancy.empty()) {
      const std::size_t wrap = occupancy.size() - 1;
      for (std::size_t h = (busy_mask * 2654435761u) >> (32 - occupancy_bits);; h = (h + 1) & wrap) {
        OccupancySlot& slot = occupancy[h];
        if (!slot.used) break;
        if (slot.mask == busy_mask) {
          slot.time += spent;
          remember(busy_mask, h);
          return;
        }
      }
    }
    add_occupancy(busy_mask, spent);
  }
  /// Registers `mask` with no time if it is new (what account() does for a
  /// mask held for no time).
  void note_mask(std::uint32_t mask) {
    for (std::size_t k = 0; k < 2; ++k)
      if (recent_slot[k] != kNoSlot && recent_mask[k] == mask) return;
    if (!occupancy.empty()) {
      const std::size_t wrap = occupancy.size() - 1;
      for (std::size_t h = (mask * 2654435761u) >> (32 - occupancy_bits);; h = (h + 1) & wrap) {
        const OccupancySlot& slot = occupancy[h];
        if (!slot.used) break;
        if (slot.mask == mask) {
          remember(mask, h);
          return;
        }
      }
    }
    add_occupancy(mask, Time{});
  }
  void remember(std::uint32_t mask, std::size_t slot) {
    recent_mask[1] = recent_mask[0];
    recent_slot[1] = recent_slot[0];
    recent_mask[0] = mask;
    recent_slot[0] = slot;
  }
  /// A mask seen for the first time (grows the table as needed).
  void add_occupancy(std::uint32_t mask, Time spent);
  /// Most tasks allocate and free nothing: that test is inline, the rest is not.
  void allocate(std::uint64_t bytes, Time now) {
    if (bytes != 0) allocate_nonzero(bytes, now);
  }
  void release(std::uint64_t bytes, Time now) {
    if (bytes != 0) release_nonzero(bytes, now);
  }
  void allocate_nonzero(std::uint64_t bytes, Time now);
  void release_nonzero(std::uint64_t bytes, Time now);
};

/// A member that has reached a communicator's pending operation: the head
/// task of its stream.
struct Arrival {
  std::uint32_t local;  // rank slot
  std::uint8_t stream;
};

struct CommState {
  std::uint32_t expected =
      0;  // arrivals an operation waits for: simulated members (a channel folded onto its sender: its send and receive)
  const taskgraph::Task* first = nullptr;  // first arrival's task, to check the others against
  std::vector<Arrival> arrivals;
};

struct PlannedTransfer;  // transfer_plans.hpp

/// A collective or transfer in progress: which phase of its plan runs and
/// how many of that phase's flows are still moving. A phase whose flows all
/// started on free links is "batched": one event for its end instead of one
/// per flow, until another flow changes the rate of one of its flows.
struct TransferState {
  taskgraph::CommunicatorId communicator = 0;
  const PlannedTransfer* planned = nullptr;
  const cost::TransferPlan* plan = nullptr;  // planned->plan
  std::size_t phase = 0;
  std::size_t flows_left = 0;
  double weight = 1;  // of its flows on shared links
  bool batched = false;
  std::uint32_t version = 0;  // a pending batched-phase event is stale when this moved on
  std::vector<std::uint32_t> flows;  // the current phase's flows
};

class RunState {
 public:
  RunState(const taskgraph::Workload& w, const cost::CostModel& cost, const RunOptions& options);

  std::uint8_t num_streams = 0;
  std::vector<std::unique_ptr<CompiledProgram>> programs;  // by program index; null if unused
  std::vector<RankState> ranks;                            // simulated ranks, ascending
  std::vector<StreamState> streams;                        // [rank slot · num_streams + s]
  std::vector<CommState> comms;                            // by communicator id
  std::vector<MemorySample> samples;

  StreamState& stream(std::uint32_t local, std::uint8_t s) {
    return streams[static_cast<std::size_t>(local) * num_streams + s];
  }
  const StreamState& stream(std::uint32_t local, std::uint8_t s) const {
    return streams[static_cast<std::size_t>(local) * num_streams + s];
  }
  bool all_finished() const;

  /// The global id of the task at the head of stream s of rank `local`;
  /// false when the stream has run all its tasks.
  bool head(std::uint32_t local, std::uint8_t s, TaskId& out) const {
    const StreamState& st = streams[static_cast<std::size_t>(local) * num_streams + s];
    if (st.cursor == st.end) return false;
    out = st.head_id();
    return true;
  }
  /// The template of the head task of stream `st` of rank `r` (the stream
  /// must have one).
  static const CompiledProgram::Template& head_template(const RankState& r, const StreamState& st) {
    return r.program->templates[st.first_template + *st.cursor];
  }
  /// Moves stream s of rank `local` (state `st`) past its head task.
  void advance(std::uint32_t local, std::uint8_t s, StreamState& st) {
    if (++st.cursor == st.end) enter_instance(local, s, st.instance_at + 1);
  }
  /// Moves per-rank statistics and recordings into `result`.
  RunResult collect(RunResult result);

 private:
  /// Points stream s of rank `local` at the first task of the k-th instance
  /// with tasks on it, or at nothing when there is none.
  void enter_instance(std::uint32_t local, std::uint8_t s, std::uint32_t k);
};

}  // namespace ptsim::engine::internal

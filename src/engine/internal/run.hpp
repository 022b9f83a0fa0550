// Run: one simulation of a Workload (see simulator.hpp) — stream cursors,
// dependency checks, rendezvous on communicators, transfers as flows on
// shared links, kernels slowed while communication shares their GPU, memory
// and occupancy. Its members live in three files, one job each:
// simulator.cpp (set-up and the event loop), run_kernels.cpp (streams,
// kernels, the host's issue, a task's end) and run_transfers.cpp (rendezvous,
// phases, flows). Private to engine/.
#pragma once

#include <cstdint>
#include <vector>

#include "internal/compiled_program.hpp"
#include "internal/flow_network.hpp"
#include "internal/run_state.hpp"
#include "internal/transfer_plans.hpp"
#include "ptsim/engine/event_queue.hpp"
#include "ptsim/engine/run_result.hpp"
#include "ptsim/engine/simulator.hpp"

namespace ptsim::engine::internal {

// What an event's kind says, and what its target and version name.
inline constexpr std::uint8_t kKernelDone =
    0;  // target: rank slot, stream, version; its head task ends (a kernel, or see arrive)
inline constexpr std::uint8_t kFlowDone = 1;      // target: flow, version
inline constexpr std::uint8_t kPhaseDone = 2;     // target: transfer (its latency has passed)
inline constexpr std::uint8_t kBatchDone = 3;     // target: transfer, version (its batched flows are done)
inline constexpr std::uint8_t kTransferDone = 4;  // target: transfer, version (its remaining phases ran alone)
inline constexpr std::uint8_t kHostIssued = 5;    // target: rank slot, stream; the host has issued its ready head

class Run {
 public:
  Run(const taskgraph::Workload& w, const cost::CostModel& cost, const RunOptions& options);
  RunResult execute();

 private:
  using Template = CompiledProgram::Template;
  using Task = taskgraph::Task;
  using TaskId = taskgraph::TaskId;

  // Streams and kernels (run_kernels.cpp). The hot ones are defined
  // `inline` there, beside all their callers, so that a kernel's end is one
  // function as it was when they were in-class; GCC still left
  // schedule_started_kernel out of line (12% more instructions on the GPT-3
  // bench case), hence always_inline.
  static const Template* ready_head(const RankState& r, const StreamState& st, TaskId& t);
  void try_start(std::uint32_t local, std::uint8_t s, Time now);
  void try_start(std::uint32_t local, std::uint8_t s, RankState& r, StreamState& stream, Time now);
  static Time host_release(const RankState& r, const StreamState& stream, const Template& tp);
  static bool host_blocked(const RankState& r, TaskId t);
  bool wait_for_host(std::uint32_t local, std::uint8_t s, RankState& r, StreamState& stream, const Template& tp,
                     TaskId t, Time now);
  void host_issued(std::uint32_t local, std::uint8_t s, Time now);
  void start_kernel(std::uint32_t local, std::uint8_t s, RankState& r, StreamState& stream, const Template& tp,
                    Time now);
  bool continue_kernel(std::uint32_t local, std::uint8_t s, RankState& r, StreamState& stream, Time now);
  [[gnu::always_inline]] void schedule_started_kernel(std::uint32_t local, std::uint8_t s, const RankState& r,
                                                      StreamState& stream, std::int64_t duration_ns, Time now);
  void schedule_kernel(std::uint32_t local, std::uint8_t s, Time now);
  void set_busy(std::uint32_t local, std::uint8_t s, bool busy, Time now);
  void set_busy(std::uint32_t local, std::uint8_t s, RankState& r, bool busy, Time now);
  [[gnu::noinline]] void reprice(std::uint32_t local, std::uint32_t kernels, double slowdown, Time now);
  double comm_slowdown(std::uint32_t local, std::uint32_t busy) const;
  void begin(std::uint32_t local, std::uint8_t s, const Task& task, double slows, Time now);
  void finish_task(std::uint32_t local, std::uint8_t s, Time now);
  static std::uint32_t pass_host_syncs(RankState& r, Time now);

  // Rendezvous and transfers (run_transfers.cpp).
  void arrive(std::uint32_t local, std::uint8_t s, const Task& task, Time now);
  std::vector<double> flow_weights() const;
  void start_transfer(taskgraph::CommunicatorId id, const PlannedTransfer& planned, Time now);
  void start_phase(std::uint32_t t, Time now);
  void batch_done(std::uint32_t t, Time now);
  void unbatch(std::uint32_t t, Time now);
  void end_phase(std::uint32_t t, Time now);
  void reschedule_flows(Time now);
  void flow_done(FlowId f, Time now);
  void next_phase(std::uint32_t t, Time now);
  void finish_transfer(std::uint32_t t, Time now);

  const taskgraph::Workload& w_;
  const RunOptions& options_;
  RunState state_;
  FlowNetwork network_;
  std::uint32_t compute_mask_;
  /// Streams whose busy bit slows kernels: those of neither kernels nor
  /// copy engines (taskgraph::Workload::copy_stream_mask).
  std::uint32_t comm_mask_;
  std::uint32_t copy_mask_;
  bool host_issue_ = false;  // some simulated rank's tasks cost its host time to issue
  EventQueue queue_;
  RunResult result_;
  std::vector<TransferState> transfers_;
  std::vector<std::uint32_t> free_transfers_;
  std::vector<std::vector<Arrival>> spare_arrivals_;  // see finish_transfer
  TransferPlans plans_;
};

}  // namespace ptsim::engine::internal

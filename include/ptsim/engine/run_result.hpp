// RunResult: what the engine observed while running a Workload — per-rank
// finish times, memory peaks, busy time per task category, how the primary
// (compute) stream's time divides against the other streams, and, for the
// ranks asked for, every task's start and end. Generic: categories and
// streams are the workload's labels.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "ptsim/common/ids.hpp"
#include "ptsim/common/time.hpp"
#include "ptsim/taskgraph/task.hpp"

namespace ptsim::engine {

struct CategoryTotals {
  Time busy;                  // summed task durations
  std::uint64_t bytes = 0;    // summed Task::bytes
  std::uint64_t count = 0;    // tasks run
  double flops = 0;           // summed Task::flops
};

struct RankStats {
  Rank rank = 0;
  Time finish;                          // end of the rank's last task
  std::uint64_t base_memory_bytes = 0;  // resident from the start
  std::uint64_t peak_memory_bytes = 0;  // base + peak of allocations
  Time peak_memory_at;
  std::vector<CategoryTotals> categories;  // indexed like Workload::category_names
  /// occupancy[mask]: time during which exactly the streams in `mask` were
  /// running a task (bit s = stream s), from time 0 to `finish`; masks that
  /// never occurred are absent.
  std::map<std::uint32_t, Time> occupancy;
  /// Of the time with no stream busy (occupancy[0]), the part during which
  /// a task was ready but its host had not issued it yet (host-bound).
  Time host_wait;
};

struct TaskRecord {
  Rank rank = 0;
  taskgraph::TaskId task = 0;
  Time start;
  Time end;
  /// When the rank's host spent its time issuing the task (host_end: it was
  /// issued); both zero when issuing it costs the host nothing.
  Time host_start;
  Time host_end;
};

struct MemorySample {
  Rank rank = 0;
  Time at;
  std::uint64_t bytes = 0;  // allocated memory (base included) from `at` on
};

struct RunResult {
  Time makespan;                  // latest finish over the simulated ranks
  std::uint64_t events = 0;       // events popped from the future event set
  std::uint64_t tasks = 0;        // tasks run, summed over simulated ranks
  std::uint64_t fingerprint = 0;  // sum of hashes of each task's (rank, id, finish time): determinism checks
  std::vector<RankStats> ranks;   // one per simulated rank, in rank order
  std::vector<TaskRecord> timeline;        // recorded ranks only, in completion order
  std::vector<MemorySample> memory_samples;  // recorded ranks only, in time order
};

}  // namespace ptsim::engine

// Pipeline schedules, each described once: its name, how many model chunks a
// stage holds, where a chunk sits along a micro-batch's path, its step order
// (pipeline_schedule.hpp), the constraints it puts on the pipeline and the
// micro-batches with their messages, and the properties the workload builder
// and the planner read. The config reader, the choices lists and --help,
// the planner's bounds and its candidate search all read these descriptors;
// adding a schedule is its order function, one descriptor in
// schedule_registry.cpp and its ScheduleKind value.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ptsim/strategy/parallel_config.hpp"
#include "ptsim/strategy/pipeline_schedule.hpp"

namespace ptsim::strategy {

/// A rule a schedule's pipeline or micro-batches break: the strategy field
/// at fault with its value, the rule, and the fix, as config errors read.
struct ScheduleViolation {
  std::string field;  // strategy field, e.g. "pp", "schedule", "global_batch_size"
  std::string value;  // its value as the user gave it
  std::string rule;
  std::string fix;
};

/// What a schedule's constraints look at.
struct ScheduleShape {
  std::int64_t pp = 1;
  std::int64_t vpp = 1;
  std::int64_t microbatches = 1;
  std::int64_t global_batch_size = 1;
  std::int64_t sequences_per_microbatch_step = 1;  // micro-batch size · dp
};

struct ScheduleDescriptor {
  ScheduleKind kind = ScheduleKind::OneFOneB;
  std::string_view name;       // the strategy value, e.g. "zb-h1"
  std::string_view help_note = "";  // after the name in --help, e.g. "(default)"
  /// Megatron-LM's batched p2p synchronization (--batch-p2p-sync) applies:
  /// Megatron-LM runs this schedule.
  bool megatron = false;
  /// A stage's first kernel waits for the first micro-batch through the first
  /// chunks of the stages before it, and the last backward passes them after
  /// its last kernel, which is its first chunk's: step ≥ m·T_b + Σ_{s<b} C_s,
  /// C_s stage s's first chunk's forward and backward (the planner's bound).
  bool chained = false;
  /// Micro-batches enter at both ends of the pipeline (DualPipe): two
  /// directions, each a mirror of the other.
  bool two_directions = false;
  /// Its model chunks are --vpp's (interleaving); the others hold a fixed
  /// number and refuse --vpp.
  bool chunks_from_vpp = false;
  /// ptsim plan searches it unless --schedules names others: the schedules
  /// Megatron-LM users run (docs/formats.md).
  bool searched_by_default = false;
  /// Model chunks a stage holds for a run's --vpp (1 unless the schedule
  /// interleaves or runs two directions).
  std::int64_t (*chunks)(std::int64_t vpp) = nullptr;
  /// Position of `chunk` on `stage` along its micro-batch's path.
  std::int64_t (*virtual_stage)(std::int64_t stage, std::int64_t pp, std::int64_t chunk) = nullptr;
  /// The ordered steps of `stage`.
  std::vector<PipelineStep> (*order)(std::int64_t stage, std::int64_t pp, std::int64_t microbatches,
                                     std::int64_t chunks) = nullptr;
  /// What the pipeline and its chunks must be, before micro-batches are known.
  std::optional<ScheduleViolation> (*check_pipeline)(const ScheduleShape&) = nullptr;
  /// What the micro-batches must be.
  std::optional<ScheduleViolation> (*check_microbatches)(const ScheduleShape&) = nullptr;
};

/// Every schedule, in ScheduleKind's order.
std::span<const ScheduleDescriptor> schedules();
const ScheduleDescriptor& describe(ScheduleKind kind);
/// The schedule of a strategy value, or nullptr.
const ScheduleDescriptor* find_schedule(std::string_view name);
/// The schedule a strategy that names none runs: interleaved with vpp > 1
/// model chunks a stage, 1F1B otherwise (Megatron-LM's rule; the help notes
/// of the two descriptors say so).
ScheduleKind default_schedule(std::int64_t vpp);
/// Every schedule's name, in order ("naive", "gpipe", …).
std::vector<std::string_view> schedule_names();
/// "naive | gpipe | 1f1b (default) | …": the choices for --help.
const char* schedule_choices_help();

/// Virtual stages along a micro-batch's path: pp·v interleaved, pp otherwise.
std::int64_t path_stages(ScheduleKind kind, std::int64_t pp, std::int64_t chunks);
/// Forwards `stage` runs before its first backward: the fewest chunk
/// activations it holds at its peak, read off its order (`combined_1f1b`:
/// make_pipeline_order's, whose forward paired with that backward runs
/// beside it layer by layer and is not counted).
std::int64_t forwards_before_first_backward(ScheduleKind kind, std::int64_t stage, std::int64_t pp,
                                            std::int64_t microbatches, std::int64_t chunks, bool combined_1f1b = false);

}  // namespace ptsim::strategy

// The pipeline schedules ptsim simulates, one descriptor each (see
// schedule.hpp). A descriptor's constraints carry the messages a user sees.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>

#include "internal/schedule_orders.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/strategy/schedule.hpp"

namespace ptsim::strategy {

namespace {

std::int64_t one_chunk(std::int64_t) { return 1; }
std::int64_t vpp_chunks(std::int64_t vpp) { return vpp; }
std::int64_t two_chunks(std::int64_t) { return 2; }

std::int64_t single_chunk_stage(std::int64_t stage, std::int64_t, std::int64_t chunk) {
  PTSIM_ASSERT(chunk == 0, "only interleaved 1F1B and DualPipe have several chunks");
  return stage;
}
// Chunk c of stage s is virtual stage c·p + s: a micro-batch visits the
// stages v times.
std::int64_t interleaved_stage(std::int64_t stage, std::int64_t p, std::int64_t chunk) {
  PTSIM_ASSERT(chunk >= 0, "model chunk must not be negative");
  return chunk * p + stage;
}
// Chunk 0 is model stage r of direction 0, chunk 1 model stage p−1−r of direction 1.
std::int64_t dual_pipe_stage(std::int64_t stage, std::int64_t p, std::int64_t chunk) {
  PTSIM_ASSERT(chunk == 0 || chunk == 1, "DualPipe has chunks 0 and 1");
  return chunk == 0 ? stage : p - 1 - stage;
}

std::optional<ScheduleViolation> anything(const ScheduleShape&) { return std::nullopt; }

std::optional<ScheduleViolation> interleaved_pipeline(const ScheduleShape& s) {
  if (s.vpp == 1)
    return ScheduleViolation{"schedule", "interleaved", "needs several model chunks per stage",
                             "give --virtual-pipeline-model-parallel-size V ≥ 2"};
  return std::nullopt;
}

std::optional<ScheduleViolation> interleaved_microbatches(const ScheduleShape& s) {
  if (s.microbatches % s.pp == 0) return std::nullopt;
  return ScheduleViolation{
      "global_batch_size", std::to_string(s.global_batch_size),
      fmt::format("gives {} micro-batches, not a multiple of pp = {}: the interleaved schedule runs "
                  "micro-batches in groups of pp (Megatron-Core refuses a smaller last group, which "
                  "deadlocks)",
                  s.microbatches, s.pp),
      fmt::format("use a multiple of {}", s.pp * s.sequences_per_microbatch_step)};
}

std::optional<ScheduleViolation> dual_pipe_pipeline(const ScheduleShape& s) {
  if (s.pp >= 2 && s.pp % 2 == 0) return std::nullopt;
  return ScheduleViolation{"pp", std::to_string(s.pp),
                           "must be even for --schedule dualpipe (ranks r and p−1−r pair up)",
                           "use an even pipeline size"};
}

std::optional<ScheduleViolation> dual_pipe_microbatches(const ScheduleShape& s) {
  if (s.microbatches % 2 == 0 && s.microbatches >= 2 * s.pp) return std::nullopt;
  return ScheduleViolation{
      "global_batch_size", std::to_string(s.global_batch_size),
      fmt::format("gives {} micro-batches; DualPipe needs an even number, at least 2·pp = {} (half "
                  "enter each end of the pipeline)",
                  s.microbatches, 2 * s.pp),
      fmt::format("use a global batch that makes an even number ≥ {} of micro-batches", 2 * s.pp)};
}

// In ScheduleKind's order (describe() indexes by it). Naive runs the whole
// per-replica batch as one micro-batch, which resolve_run sets.
constexpr std::array<ScheduleDescriptor, 7> kSchedules = {{
    {.kind = ScheduleKind::Naive,
     .name = "naive",
     .megatron = true,
     .chained = true,
     .chunks = one_chunk,
     .virtual_stage = single_chunk_stage,
     .order = internal::naive_order,
     .check_pipeline = anything,
     .check_microbatches = anything},
    {.kind = ScheduleKind::GPipe,
     .name = "gpipe",
     .megatron = true,
     .chained = true,
     .chunks = one_chunk,
     .virtual_stage = single_chunk_stage,
     .order = internal::gpipe_order,
     .check_pipeline = anything,
     .check_microbatches = anything},
    {.kind = ScheduleKind::OneFOneB,
     .name = "1f1b",
     .help_note = "(default)",
     .megatron = true,
     .chained = true,
     .searched_by_default = true,
     .chunks = one_chunk,
     .virtual_stage = single_chunk_stage,
     .order = internal::one_f_one_b_order,
     .check_pipeline = anything,
     .check_microbatches = anything},
    {.kind = ScheduleKind::Interleaved,
     .name = "interleaved",
     .help_note = "(default when vpp > 1)",
     .megatron = true,
     .chained = true,
     .chunks_from_vpp = true,
     .searched_by_default = true,
     .chunks = vpp_chunks,
     .virtual_stage = interleaved_stage,
     .order = internal::interleaved_order,
     .check_pipeline = interleaved_pipeline,
     .check_microbatches = interleaved_microbatches},
    {.kind = ScheduleKind::ZbH1,
     .name = "zb-h1",
     .chunks = one_chunk,
     .virtual_stage = single_chunk_stage,
     .order = internal::zb_h1_order,
     .check_pipeline = anything,
     .check_microbatches = anything},
    {.kind = ScheduleKind::ZbH2,
     .name = "zb-h2",
     .chunks = one_chunk,
     .virtual_stage = single_chunk_stage,
     .order = internal::zb_h2_order,
     .check_pipeline = anything,
     .check_microbatches = anything},
    {.kind = ScheduleKind::DualPipe,
     .name = "dualpipe",
     .two_directions = true,
     .chunks = two_chunks,
     .virtual_stage = dual_pipe_stage,
     .order = internal::dual_pipe_order,
     .check_pipeline = dual_pipe_pipeline,
     .check_microbatches = dual_pipe_microbatches},
}};

constexpr bool in_kind_order() {
  for (std::size_t i = 0; i < kSchedules.size(); ++i)
    if (static_cast<std::size_t>(kSchedules[i].kind) != i) return false;
  return true;
}
static_assert(in_kind_order(), "kSchedules lists the schedules in ScheduleKind's order");

}  // namespace

std::span<const ScheduleDescriptor> schedules() { return kSchedules; }

const ScheduleDescriptor& describe(ScheduleKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  PTSIM_ASSERT(i < kSchedules.size(), "unknown schedule kind");
  return kSchedules[i];
}

const ScheduleDescriptor* find_schedule(std::string_view name) {
  for (const auto& d : kSchedules)
    if (d.name == name) return &d;
  return nullptr;
}

ScheduleKind default_schedule(std::int64_t vpp) { return vpp > 1 ? ScheduleKind::Interleaved : ScheduleKind::OneFOneB; }

std::vector<std::string_view> schedule_names() {
  std::vector<std::string_view> names;
  for (const auto& d : kSchedules) names.push_back(d.name);
  return names;
}

const char* schedule_choices_help() {
  static const std::string help = [] {
    std::string out;
    for (const auto& d : kSchedules) {
      if (!out.empty()) out += " | ";
      out += d.name;
      if (!d.help_note.empty()) out += fmt::format(" {}", d.help_note);
    }
    return out;
  }();
  return help.c_str();
}

std::int64_t path_stages(ScheduleKind kind, std::int64_t pp, std::int64_t chunks) {
  const ScheduleDescriptor& d = describe(kind);
  std::int64_t last = 0;
  for (std::int64_t c = 0; c < chunks; ++c) last = std::max(last, d.virtual_stage(pp - 1, pp, c));
  for (std::int64_t c = 0; c < chunks; ++c) last = std::max(last, d.virtual_stage(0, pp, c));
  return last + 1;
}

std::int64_t forwards_before_first_backward(ScheduleKind kind, std::int64_t stage, std::int64_t pp,
                                            std::int64_t microbatches, std::int64_t chunks, bool combined_1f1b) {
  std::int64_t forwards = 0;
  for (const PipelineStep& step : make_pipeline_order(kind, stage, pp, microbatches, chunks, combined_1f1b)) {
    if (step.pass != Pass::Forward) break;
    // Combined 1F1B runs a paired forward layer by layer beside the backward
    // that frees its memory: it adds at most a layer, not a chunk.
    if (combined_1f1b && step.overlapped_with_next) continue;
    ++forwards;
  }
  return forwards;
}

}  // namespace ptsim::strategy

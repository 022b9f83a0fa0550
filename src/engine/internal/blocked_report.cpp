// Deadlock and mismatch messages (see blocked_report.hpp).
#include "internal/blocked_report.hpp"

#include <fmt/format.h>

#include "ptsim/common/error.hpp"

namespace ptsim::engine::internal {

namespace {

constexpr std::size_t kMaxRanksShown = 8;

std::string describe_task(const taskgraph::Task& t, const taskgraph::Workload& w) {
  std::string s = fmt::format("'{}'", w.op_names[t.name]);
  if (t.microbatch >= 0) s += fmt::format(" micro-batch {}", t.microbatch);
  if (t.layer >= 0) s += fmt::format(" layer {}", t.layer);
  return s;
}

}  // namespace

std::string describe_blocked(const RunState& state, const taskgraph::Workload& w) {
  std::size_t blocked = 0;
  std::string detail;
  for (std::size_t i = 0; i < state.ranks.size(); ++i) {
    const RankState& r = state.ranks[i];
    std::string lines;
    for (std::uint8_t s = 0; s < state.num_streams; ++s) {
      const StreamState& st = state.streams[i * state.num_streams + s];
      const auto& order = r.program->stream_tasks[s];
      if (st.cursor >= order.size()) continue;
      const taskgraph::TaskId t = order[st.cursor];
      const taskgraph::Task& task = r.program->tasks[t];
      std::string why;
      if (st.waiting) {
        const auto id = w.communicator(r.rank, task.comm_slot);
        why = fmt::format("waits for the other members of communicator {} ({} of {} arrived)", id,
                          state.comms[id].arrivals.size(), state.comms[id].expected);
      } else {
        std::string missing;
        for (std::uint32_t k = r.program->pred_begin[t]; k < r.program->pred_begin[t + 1]; ++k)
          if (!r.is_done(r.program->preds[k]))
            missing += (missing.empty() ? "" : ", ") +
                       describe_task(r.program->tasks[r.program->preds[k]], w);
        why = "waits for " + missing;
      }
      lines += fmt::format("\n    stream {}: {} {}", w.stream_names[s], describe_task(task, w), why);
    }
    if (lines.empty()) continue;
    if (++blocked <= kMaxRanksShown) detail += fmt::format("\n  rank {}:{}", r.rank, lines);
  }
  return fmt::format("simulation deadlocked: {} rank(s) cannot finish their step{}{}", blocked,
                     detail,
                     blocked > kMaxRanksShown
                         ? fmt::format("\n  … and {} more ranks", blocked - kMaxRanksShown)
                         : "");
}

void check_matching(const taskgraph::Task& first, const taskgraph::Task& arriving,
                    const taskgraph::Workload& w, Rank rank, taskgraph::CommunicatorId id) {
  using taskgraph::TaskKind;
  const bool p2p_pair = (first.kind == TaskKind::Send && arriving.kind == TaskKind::Recv) ||
                        (first.kind == TaskKind::Recv && arriving.kind == TaskKind::Send);
  const bool same_collective = first.kind == TaskKind::Collective &&
                               arriving.kind == TaskKind::Collective &&
                               first.collective == arriving.collective;
  if ((p2p_pair || same_collective) && first.bytes == arriving.bytes) return;
  throw SimulationError(fmt::format(
      "mismatched operations on communicator {}: rank {} posts {} ({} bytes) where another "
      "member posted {} ({} bytes); members must issue the same operations in the same order",
      id, rank, w.op_names[arriving.name], arriving.bytes, w.op_names[first.name], first.bytes));
}

}  // namespace ptsim::engine::internal

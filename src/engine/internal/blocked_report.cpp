// Deadlock and mismatch messages (see blocked_report.hpp).
#include "internal/blocked_report.hpp"

#include <fmt/format.h>

#include "ptsim/common/error.hpp"

namespace ptsim::engine::internal {

namespace {

constexpr std::size_t kMaxRanksShown = 8;

std::string describe_task(const CompiledProgram& p, const taskgraph::Program& source, TaskId global,
                          const taskgraph::Workload& w) {
  const taskgraph::BlockInstance& inst = source.instances()[p.instance_of(global)];
  std::string s = fmt::format("'{}'", w.op_names[p.task(global).name]);
  if (inst.microbatch >= 0) s += fmt::format(" micro-batch {}", inst.microbatch);
  if (inst.layer >= 0) s += fmt::format(" layer {}", inst.layer);
  return s;
}

}  // namespace

std::string describe_blocked(const RunState& state, const taskgraph::Workload& w) {
  std::size_t blocked = 0;
  std::string detail;
  for (std::size_t i = 0; i < state.ranks.size(); ++i) {
    const RankState& r = state.ranks[i];
    const CompiledProgram& p = *r.program;
    const taskgraph::Program& source = w.programs[w.program_of_rank[static_cast<std::size_t>(r.rank)]];
    std::string lines;
    for (std::uint8_t s = 0; s < state.num_streams; ++s) {
      const StreamState& st = state.streams[i * state.num_streams + s];
      TaskId t = 0;
      if (!state.head(static_cast<std::uint32_t>(i), s, t)) continue;
      const taskgraph::Task& task = p.task(t);
      std::string why;
      if (st.host_pending && (r.sync_waiters >> s & 1u)) {
        const auto& sync = p.host_syncs[r.next_sync];
        why = fmt::format("waits for its host, which synchronizes the device after {} until every task "
                          "issued before is done", describe_task(p, source, sync.task, w));
      } else if (st.waiting) {
        const auto id = w.communicator(r.rank, task.comm_slot);
        why = fmt::format("waits for the other members of communicator {} ({} of {} arrived)", id,
                          state.comms[id].arrivals.size(), state.comms[id].expected);
      } else {
        std::string missing;
        p.for_each_pred(t, p.find_template(t), [&](TaskId pred) {
          if (!r.is_done(pred)) missing += (missing.empty() ? "" : ", ") + describe_task(p, source, pred, w);
        });
        why = "waits for " + missing;
      }
      lines += fmt::format("\n    stream {}: {} {}", w.stream_names[s], describe_task(p, source, t, w), why);
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

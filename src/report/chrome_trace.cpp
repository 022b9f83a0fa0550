// Chrome trace-event writer (see chrome_trace.hpp). Streams the events with
// fmt rather than building a JSON tree: a trace holds millions of them.
#include "ptsim/report/chrome_trace.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <map>
#include <set>

#include "ptsim/common/dtype.hpp"
#include "ptsim/common/units.hpp"
#include "ptsim/taskgraph/task.hpp"

namespace ptsim::report {

namespace {

// Microseconds, the trace format's unit, with nanosecond resolution.
std::string us(Time t) { return fmt::format("{}.{:03}", t.ns() / 1000, t.ns() % 1000); }

std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

}  // namespace

void write_chrome_trace(const engine::RunResult& run, const taskgraph::Workload& w,
                        std::ostream& out) {
  std::set<Rank> ranks;
  for (const auto& sample : run.memory_samples) ranks.insert(sample.rank);
  for (const auto& record : run.timeline) ranks.insert(record.rank);

  fmt::print(out, "{{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  bool first = true;
  const auto sep = [&] {
    if (!first) fmt::print(out, ",\n");
    first = false;
  };
  const auto program_of = [&](Rank r) -> const taskgraph::Program& {
    return w.programs[w.program_of_rank[static_cast<std::size_t>(r)]];
  };
  const auto task_of = [&](const engine::TaskRecord& rec) { return program_of(rec.rank).task(rec.task); };
  // Only the streams a rank runs something on get a track: a rank of a
  // pipeline's middle stage has no embedding stream, a run without EP no ep.
  std::set<std::pair<Rank, std::size_t>> used;
  for (const auto& rec : run.timeline) used.emplace(rec.rank, task_of(rec).stream);
  // The host's track, after the streams', on the ranks whose host issue
  // costs time: when it issued each task, in program order.
  const std::size_t host_tid = w.stream_names.size();
  std::set<Rank> host_issued;
  for (const auto& rec : run.timeline)
    if (rec.host_end > rec.host_start) host_issued.insert(rec.rank);
  for (const Rank r : ranks) {
    sep();
    fmt::print(out, R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"rank {}"}}}})", r, r);
    sep();
    fmt::print(out, R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})", r, r);
    for (std::size_t s = 0; s < w.stream_names.size(); ++s) {
      if (!used.count({r, s})) continue;
      sep();
      fmt::print(out, R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", r, s,
                 quoted(w.stream_names[s]));
    }
    if (host_issued.count(r)) {
      sep();
      fmt::print(out, R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"host"}}}})", r,
                 host_tid);
    }
  }
  for (const auto& rec : run.timeline) {
    if (!(rec.host_end > rec.host_start)) continue;
    const auto task = task_of(rec);
    sep();
    fmt::print(out,
               R"({{"ph":"X","name":{},"cat":"host issue","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"stream":{}}}}})",
               quoted(w.op_names[task.name]), rec.rank, host_tid, us(rec.host_start), us(rec.host_end - rec.host_start),
               quoted(w.stream_names[task.stream]));
  }
  for (const auto& rec : run.timeline) {
    const auto task = task_of(rec);
    sep();
    // The slice's kernel as ptsim costed it: its class and dtype, its shape
    // (GEMM m, n, k, batch; attention batch·heads, query, key, head width)
    // and FLOPs, or the collective and its bytes.
    std::string detail;
    if (task.kind == taskgraph::TaskKind::Compute) {
      detail = fmt::format(R"(,"kernel":{},"dtype":{},"flops":{:.0f})", quoted(std::string(taskgraph::to_string(task.kernel))),
                           quoted(std::string(to_string(task.dtype))), task.flops);
      if (task.shape[0] > 0)
        detail += fmt::format(R"(,"shape":[{},{},{},{}])", task.shape[0], task.shape[1], task.shape[2], task.shape[3]);
    } else if (task.collective != taskgraph::CollectiveKind::None) {
      detail = fmt::format(R"(,"collective":{})", quoted(std::string(taskgraph::to_string(task.collective))));
    }
    fmt::print(out,
               R"({{"ph":"X","name":{},"cat":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"microbatch":{},"layer":{},"bytes":{}{}}}}})",
               quoted(w.op_names[task.name]), quoted(w.category_names[task.category]), rec.rank,
               task.stream, us(rec.start), us(rec.end - rec.start), task.microbatch, task.layer,
               task.bytes, detail);
  }
  // Flow arrows: a communicator's k-th operation is the same collective on
  // every member (NCCL's rule, as the engine matches them), so the recorded
  // members of each are chained in start order — a send to its receive, a
  // collective through its ranks.
  using Occurrence = std::pair<taskgraph::CommunicatorId, std::uint64_t>;  // (communicator, k)
  std::map<std::pair<Rank, taskgraph::TaskId>, Occurrence> occurrence;  // communication tasks only
  for (const Rank r : ranks) {
    const auto& program = program_of(r);
    std::map<taskgraph::CommunicatorId, std::uint64_t> seen;
    for (taskgraph::TaskId id = 0; id < program.num_tasks(); ++id) {
      const auto task = program.task(id);
      if (task.kind == taskgraph::TaskKind::Compute || task.collective == taskgraph::CollectiveKind::None) continue;
      const auto comm = w.communicator(r, task.comm_slot);
      if (comm != taskgraph::kNoCommunicator) occurrence[{r, id}] = {comm, seen[comm]++};
    }
  }
  std::map<Occurrence, std::vector<const engine::TaskRecord*>> members;
  for (const auto& rec : run.timeline)
    if (const auto it = occurrence.find({rec.rank, rec.task}); it != occurrence.end())
      members[it->second].push_back(&rec);
  std::uint64_t flow = 0;
  for (auto& [key, recs] : members) {
    if (recs.size() < 2) continue;
    std::sort(recs.begin(), recs.end(), [](const engine::TaskRecord* a, const engine::TaskRecord* b) {
      return a->start != b->start ? a->start < b->start : a->rank < b->rank;
    });
    ++flow;
    // One name for the chain (its first member's), as viewers bind a flow's events by id, name and category.
    const std::string name = quoted(w.op_names[task_of(*recs.front()).name]);
    for (std::size_t i = 0; i < recs.size(); ++i) {
      const auto& rec = *recs[i];
      const auto task = task_of(rec);
      const char* phase = i == 0 ? "s" : i + 1 == recs.size() ? "f" : "t";
      sep();
      fmt::print(out, R"({{"ph":"{}","id":{},"name":{},"cat":"flow","pid":{},"tid":{},"ts":{}{}}})", phase, flow,
                 name, rec.rank, task.stream, us(rec.start),
                 i == 0 ? "" : R"(,"bp":"e")");
    }
  }
  for (const auto& m : run.memory_samples) {
    sep();
    fmt::print(out, R"({{"ph":"C","name":"memory","pid":{},"ts":{},"args":{{"GiB":{:.4f}}}}})", m.rank,
               us(m.at), static_cast<double>(m.bytes) / units::kGiB);
  }
  fmt::print(out, "\n]}}\n");
}

}  // namespace ptsim::report

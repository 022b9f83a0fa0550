// Chrome trace-event writer (see chrome_trace.hpp). Streams the events with
// fmt rather than building a JSON tree: a trace holds millions of them.
#include "ptsim/report/chrome_trace.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <nlohmann/json.hpp>
#include <set>

#include "ptsim/common/units.hpp"

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
  for (const Rank r : ranks) {
    sep();
    fmt::print(out, R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"rank {}"}}}})", r, r);
    sep();
    fmt::print(out, R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})", r, r);
    for (std::size_t s = 0; s < w.stream_names.size(); ++s) {
      sep();
      fmt::print(out, R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", r, s,
                 quoted(w.stream_names[s]));
    }
  }
  for (const auto& rec : run.timeline) {
    const auto task = w.programs[w.program_of_rank[static_cast<std::size_t>(rec.rank)]].task(rec.task);
    sep();
    fmt::print(out,
               R"({{"ph":"X","name":{},"cat":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"microbatch":{},"layer":{},"bytes":{}}}}})",
               quoted(w.op_names[task.name]), quoted(w.category_names[task.category]), rec.rank,
               task.stream, us(rec.start), us(rec.end - rec.start), task.microbatch, task.layer,
               task.bytes);
  }
  for (const auto& m : run.memory_samples) {
    sep();
    fmt::print(out, R"({{"ph":"C","name":"memory","pid":{},"ts":{},"args":{{"GiB":{:.4f}}}}})", m.rank,
               us(m.at), static_cast<double>(m.bytes) / units::kGiB);
  }
  fmt::print(out, "\n]}}\n");
}

}  // namespace ptsim::report

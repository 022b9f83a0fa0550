// nccl-tests logs (see load_nccl_tests.hpp). The table is read by its
// header: the first "time", "algbw" and "busbw" columns are the out-of-place
// ones, wherever the version of nccl-tests put them (older ones have no
// "root" column).
#include "ptsim/config/load_nccl_tests.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "ptsim/common/error.hpp"

namespace ptsim::config {

namespace {

// nccl-tests' binaries by their collective, and ptsim's name for each.
const std::map<std::string, std::string>& binary_ops() {
  static const std::map<std::string, std::string> ops = {
      {"all_reduce", "all_reduce"},         {"all_gather", "all_gather"}, {"reduce_scatter", "reduce_scatter"},
      {"alltoall", "all_to_all"},           {"broadcast", "broadcast"},   {"reduce", "reduce"},
      {"sendrecv", "send_recv"}};
  return ops;
}

std::vector<std::string> tokens(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

template <typename T>
bool parse_number(const std::string& text, T& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end;
}

// "all_reduce", "allreduce", "all_to_all" or nccl-tests' "alltoall" → ptsim's name.
std::string canonical_op(const std::string& op) {
  std::string key = op;
  if (key.ends_with("_perf")) key.resize(key.size() - 5);
  if (const auto it = binary_ops().find(key); it != binary_ops().end()) return it->second;
  for (const auto& [binary, name] : binary_ops())
    if (key == name) return name;
  return "";
}

struct Columns {
  std::size_t size = 0, time = 0, algbw = 0, busbw = 0;
  std::size_t line = 0;
};

}  // namespace

const std::vector<std::string>& nccl_tests_ops() {
  static const std::vector<std::string> ops = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                               "broadcast",  "reduce",     "send_recv"};
  return ops;
}

NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& where, const NcclTestsHints& hints) {
  const std::string& op = hints.op;
  NcclTestsLog log;
  log.file = where;
  const auto fail = [&](std::size_t line, const std::string& what) {
    throw ConfigError(line ? fmt::format("{}:{}: {}", where, line, what) : fmt::format("{}: {}", where, what));
  };
  std::string given;
  if (!op.empty()) {
    given = canonical_op(op);
    if (given.empty())
      fail(0, fmt::format("--op '{}' is not a collective nccl-tests runs; use one of {}", op,
                          fmt::join(nccl_tests_ops(), ", ")));
  }
  // "#  Rank  3 Group  0 Pid 4242 on node-01 device  3 [0x5a] NVIDIA H100 80GB HBM3" (older
  // versions have no Group).
  static const std::regex rank_line(
      R"(^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s*(.*?)\s*$)");
  static const std::regex binary(R"(\b(all_reduce|all_gather|reduce_scatter|alltoall|broadcast|reduce|sendrecv)_perf\b)");
  // A launcher's tag before every line: "0: " (srun -l), "[1,0]<stdout>:" (Open MPI --tag-output).
  static const std::regex launcher_prefix(R"(^\s*(?:\[\d+,\d+\]<std(?:out|err)>:|\d+:)\s?)");
  std::set<std::int64_t> ranks;
  std::set<std::string> hosts, named;
  bool elided = false;  // "..." in place of rank lines: an excerpt
  // nccl-tests prints its rank lines in rank order just before the table: an
  // excerpt whose rank lines run up to the table ends with the last rank.
  std::optional<std::int64_t> last_rank;
  bool ranks_reach_table = false, since_rank_line = false;
  std::optional<Columns> columns;
  std::istringstream in(text);
  std::size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // Regular expressions only where a cheap look says they may match: a log is mostly table rows.
    if (line.find(':') != std::string::npos)
      line = std::regex_replace(line, launcher_prefix, "", std::regex_constants::format_first_only);
    if (line.find_first_not_of(" \t") != std::string::npos && line.substr(line.find_first_not_of(" \t")) == "...")
      elided = true;
    if (line.find("_perf") != std::string::npos)
      for (auto it = std::sregex_iterator(line.begin(), line.end(), binary); it != std::sregex_iterator(); ++it)
        named.insert(canonical_op((*it)[1].str()));
    std::smatch m;
    if (line.find("Rank") != std::string::npos && std::regex_match(line, m, rank_line)) {
      last_rank = std::stoll(m[1].str());
      ranks.insert(*last_rank);
      since_rank_line = false;
      hosts.insert(m[2].str());
      if (log.device.empty()) log.device = m[3].str();
      continue;
    }
    const auto t = tokens(line);
    if (t.empty()) continue;
    if (!t.front().starts_with("#") && !line.starts_with("NCCL version")) since_rank_line = true;
    if (t.front().starts_with("#")) {
      std::vector<std::string> header(t.begin() + (t.front() == "#" ? 1 : 0), t.end());
      if (t.front() != "#") header.front().erase(0, 1);
      const auto find = [&](const char* name) { return std::find(header.begin(), header.end(), name); };
      if (find("size") != header.end() && find("time") != header.end() && find("busbw") != header.end() &&
          find("algbw") != header.end()) {
        if (columns && !log.points.empty())
          fail(number, "a second table starts here; give each test's output as a log of its own");
        columns = Columns{static_cast<std::size_t>(find("size") - header.begin()),
                          static_cast<std::size_t>(find("time") - header.begin()),
                          static_cast<std::size_t>(find("algbw") - header.begin()),
                          static_cast<std::size_t>(find("busbw") - header.begin()), number};
        ranks_reach_table = last_rank && !since_rank_line;
      }
      continue;
    }
    if (!columns) continue;  // anything before the table: NCCL INFO lines, the command, …
    std::uint64_t bytes = 0;
    if (t.size() <= columns->size || !parse_number(t[columns->size], bytes)) continue;  // not a data row
    const std::size_t need = std::max({columns->time, columns->algbw, columns->busbw}) + 1;
    if (t.size() < need)
      fail(number, fmt::format("a row of {} columns; the table's header (line {}) needs at least {}", t.size(),
                               columns->line, need));
    NcclTestsPoint p;
    p.bytes = bytes;
    p.line = number;
    double time_us = 0;
    const std::pair<std::size_t, double*> cells[] = {
        {columns->time, &time_us}, {columns->algbw, &p.algbw_GBps}, {columns->busbw, &p.busbw_GBps}};
    for (const auto& [index, value] : cells)
      if (!parse_number(t[index], *value) || !std::isfinite(*value) || *value < 0)
        fail(number, fmt::format("'{}' in column {} is not a number ≥ 0", t[index], index + 1));
    if (bytes == 0) continue;  // a size-0 row times nothing
    if (!(time_us > 0)) fail(number, "a time of 0 µs for a non-empty message");
    p.time_s = time_us * 1e-6;
    log.points.push_back(p);
  }
  if (!columns) fail(0, "holds no nccl-tests table (a '#  size  count  type … time  algbw  busbw' header line)");
  if (log.points.empty()) fail(columns->line, "the table below this header has no data rows");
  if (named.size() > 1)
    fail(0, fmt::format("names more than one collective ({}); give each test's output as a log of its own",
                        fmt::join(named, ", ")));
  if (named.size() == 1) {
    log.op = *named.begin();
    if (!given.empty() && given != log.op)
      fail(0, fmt::format("is a {} log, but --op says {}", log.op, given));
  } else if (!given.empty()) {
    log.op = given;
  } else {
    fail(0, fmt::format("does not say which collective it measured (no *_perf binary is named); give --op, one "
                        "of {}",
                        fmt::join(nccl_tests_ops(), ", ")));
  }
  // The ranks: from the "#  Rank" lines when they are all there; else from
  // the table itself, whose busbw/algbw is 2(n−1)/n (all-reduce) or (n−1)/n
  // (all-gather, reduce-scatter, all-to-all), read on the row of the largest
  // bandwidth (two printed decimals: the most precise).
  const bool complete = !ranks.empty() && !elided && static_cast<std::int64_t>(ranks.size()) == *ranks.rbegin() + 1;
  // Both bandwidths are printed to 0.01 GB/s: a rank count agrees with the
  // table when its factor lies within that rounding of the ratio.
  std::optional<double> ratio, slack;
  const auto factor = [&](double n) { return log.op == "all_reduce" ? 2 * (n - 1) / n : (n - 1) / n; };
  if (log.op == "all_reduce" || log.op == "all_gather" || log.op == "reduce_scatter" || log.op == "all_to_all") {
    const auto best = std::max_element(log.points.begin(), log.points.end(),
                                       [](const auto& a, const auto& b) { return a.busbw_GBps < b.busbw_GBps; });
    if (best->algbw_GBps >= 1) {
      ratio = best->busbw_GBps / best->algbw_GBps;
      slack = *ratio * (0.005 / best->busbw_GBps + 0.005 / best->algbw_GBps);
    }
  }
  if (complete) {
    log.ranks = static_cast<std::int64_t>(ranks.size());
    log.nodes = static_cast<std::int64_t>(hosts.size());
    if (ratio && std::abs(factor(static_cast<double>(log.ranks)) - *ratio) > *slack)
      fail(0, fmt::format("lists {} ranks, but its busbw/algbw, {:.4f}, is not what {} over {} ranks gives ({:.4f}); "
                          "is --op right, and the log whole and unedited?",
                          log.ranks, *ratio, log.op, log.ranks, factor(static_cast<double>(log.ranks))));
    if (hints.ranks && *hints.ranks != log.ranks)
      fail(0, fmt::format("lists {} ranks, not the {} of --ranks; drop --ranks, which is for a log that does not "
                          "list them all",
                          log.ranks, *hints.ranks));
    return log;
  }
  // A rank count the user gives for a cut log: it must hold the ranks the log
  // lists and, where the table tells, agree with its busbw/algbw.
  if (hints.ranks) {
    const std::int64_t n = *hints.ranks;
    if (!ranks.empty() && *ranks.rbegin() >= n)
      fail(0, fmt::format("lists rank {}, which --ranks {} does not hold", *ranks.rbegin(), n));
    if (ratio && std::abs(factor(static_cast<double>(n)) - *ratio) > *slack)
      fail(0, fmt::format("its busbw/algbw, {:.4f}, is not what {} over --ranks {} gives ({:.4f}); is the count right?",
                          *ratio, log.op, n, factor(static_cast<double>(n))));
    log.ranks = n;  // nodes unknown: the ranks fill the profile's nodes in order
    return log;
  }
  // An excerpt whose rank lines run up to the table lists the last rank, n − 1
  // (CoreWeave's published multi-rack runs keep only that line): taken when
  // the table agrees.
  if (ranks_reach_table && *last_rank == *ranks.rbegin() &&
      (!ratio || std::abs(factor(static_cast<double>(*last_rank + 1)) - *ratio) <= *slack)) {
    log.ranks = *last_rank + 1;  // nodes unknown: the ranks fill the profile's nodes in order
    return log;
  }
  // Otherwise the table must tell the count alone: exactly one n agrees.
  std::vector<std::int64_t> agree;
  if (ratio)
    for (std::int64_t n = 2; n <= (1 << 20) && agree.size() < 2; ++n) {
      if (factor(static_cast<double>(n)) > *ratio + *slack) break;
      if (std::abs(factor(static_cast<double>(n)) - *ratio) <= *slack) agree.push_back(n);
    }
  if (agree.size() != 1)
    fail(0, ranks.empty() ? "lists no '#  Rank N … on HOST device …' lines and its table does not tell the rank count; "
                            "paste the whole output, or give the count with --ranks N"
                          : "lists only some of its '#  Rank' lines and its table does not tell the rank count; paste "
                            "the whole output, or give the count with --ranks N");
  log.ranks = agree.front();  // nodes unknown: the ranks fill the profile's nodes in order
  return log;
}

NcclTestsLog load_nccl_tests(const std::string& path, InputFiles& inputs, const NcclTestsHints& hints) {
  inputs.record(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot be read; check the path", path));
  std::stringstream text;
  text << in.rdbuf();
  return parse_nccl_tests(text.str(), path, hints);
}

}  // namespace ptsim::config

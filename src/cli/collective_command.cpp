// `ptsim collective`: one collective alone on a cluster, for every group size
// and message size asked, reported with nccl-tests' conventions so that it
// can be set beside a user's own nccl-tests output.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include "commands.hpp"
#include "parse_args.hpp"
#include "nccl_tests_format.hpp"
#include "sizes.hpp"
#include "output_file.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/common/parse_number.hpp"
#include "ptsim/config/load_hardware.hpp"
#include "ptsim/config/load_nccl_tests.hpp"
#include "ptsim/fit/fit_collectives.hpp"
#include "ptsim/cost/collective_algorithms.hpp"
#include "ptsim/cost/isolated_collective.hpp"
#include "ptsim/simulate/simulation_memory.hpp"

namespace ptsim::cli {

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    R"(Usage: ptsim collective --hw FILE [--op OPS] --ranks LIST (--sizes LIST | -b MIN -e MAX [-f F])
                        [-d TYPE] [--format table|nccl-tests] [--json FILE]
       ptsim collective --hw FILE --compare LOG [LOG...] [--op OP] [--ranks N] [--json FILE]

Predicts one collective alone on the cluster of a hardware profile: the
algorithm and protocol NCCL would pick, the time, and nccl-tests' algorithm
and bus bandwidths (busbw = algbw · 2(n−1)/n for all_reduce; · (n−1)/n for
all_gather, reduce_scatter and all_to_all; = algbw for broadcast, reduce and
send_recv). The ranks are 0 … n−1, filling nodes in order, as nccl-tests runs
on n GPUs. Sizes follow nccl-tests: the all-reduce buffer, the all-gather
output, the reduce-scatter input; K, M, G are powers of 1024. -b/-e/-f give
them as nccl-tests' own flags do, -d its data type (the count column), and
--format nccl-tests prints nccl-tests' columns (out of place and in place
alike: ptsim predicts no difference; #wrong N/A) to set beside its output.
--algo predicts with one algorithm, as NCCL_ALGO forces it (nccl-tests logs
do not record the environment: say what the run set).

--compare reads measured nccl-tests logs as printed (the rank count, nodes,
collective and sizes from the log itself; --op for a log that names no
collective, --ranks N for one whose rank lines were cut and whose table cannot
tell the count, checked against what the log does show) and sets ptsim's
prediction beside every measured row: time and busbw, measured and predicted,
and the busbw error.

Examples:
  ptsim collective --hw hw_profiles/h100-sxm5-80gb.json --op all_reduce \
      --ranks 8,16,64,1024 --sizes 1M,16M,256M,1G --json allreduce.json
  ptsim collective --hw hw_profiles/h100-sxm5-80gb.json --ranks 16 -b 8 -e 8G -f 2 --format nccl-tests
  ptsim collective --hw hw_profiles/h100-sxm5-80gb.json --compare all_reduce_2nodes.log --json compare.json
  ptsim collective --hw hw_profiles/h100-sxm5-80gb.json --compare ring.log --algo ring  # run with NCCL_ALGO=Ring

)";

struct OpInfo {
  const char* name;
  taskgraph::CollectiveKind kind;
};
constexpr OpInfo kOps[] = {
    {"all_reduce", taskgraph::CollectiveKind::AllReduce},
    {"all_gather", taskgraph::CollectiveKind::AllGather},
    {"reduce_scatter", taskgraph::CollectiveKind::ReduceScatter},
    {"all_to_all", taskgraph::CollectiveKind::AllToAll},
    {"broadcast", taskgraph::CollectiveKind::Broadcast},
    {"reduce", taskgraph::CollectiveKind::Reduce},
    {"send_recv", taskgraph::CollectiveKind::PointToPoint},
};

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  return parts;
}

std::string human_bytes(std::uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return fmt::format("{} GiB", b >> 30);
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= (1ull << 10) && b % (1ull << 10) == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

struct Flags {
  std::string hw_path, ops_text = "all_reduce", ranks_text, sizes_text, json_path, min_text, max_text,
      datatype = "float", format = "table";
  std::uint64_t factor = 2;
  std::vector<std::string> compare;
  std::optional<cost::Algorithm> algo;  // --algo: as NCCL_ALGO forces one
};

OpInfo op_named(const std::string& name) {
  const auto it = std::find_if(std::begin(kOps), std::end(kOps), [&](const OpInfo& o) { return name == o.name; });
  if (it == std::end(kOps))
    throw ConfigError(fmt::format("--op: '{}' is not a collective; use all_reduce, all_gather, "
                                  "reduce_scatter, all_to_all, broadcast, reduce or send_recv", name));
  return *it;
}

// The plan ptsim predicts, under --algo the best of that algorithm; a
// collective the forced algorithm cannot run is an error, as in NCCL.
cost::TransferPlan predicted_plan(const Flags& f, const hardware::HardwareProfile& hw, taskgraph::CollectiveKind kind,
                                  std::string_view op, std::int64_t ranks, std::uint64_t bytes) {
  auto plan = cost::isolated_collective(hw, kind, ranks, bytes, f.algo);
  if (!plan)
    throw ConfigError(fmt::format("--algo {}: NCCL does not run {} with it on {} ranks of {}", cost::to_string(*f.algo),
                                  op, ranks, hw.name));
  return std::move(*plan);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One --ranks item: a group size, in the range any rank count takes.
std::int64_t group_size(const std::string& item) {
  const auto n = whole_number(item);
  if (!n || *n < 2 || *n > (1 << 24))
    throw ConfigError(fmt::format("--ranks: '{}' is not a group size in [2, 16777216]", item));
  return *n;
}

// --compare: every measured row of every log beside ptsim's prediction.
// `hints`: the collective of logs that do not name theirs, the rank count of
// logs that do not tell it.
int run_compare(const Flags& f, const config::NcclTestsHints& hints, std::ostream& out) {
  config::InputFiles read;
  for (const auto& path : f.compare) read.record(path);
  read.record(f.hw_path);
  check_output_paths({{"--json", f.json_path}}, read);
  const hardware::HardwareProfile hw = config::load_hardware(f.hw_path, read);
  std::vector<config::NcclTestsLog> logs;
  for (const auto& path : f.compare) {
    logs.push_back(config::load_nccl_tests(path, read, hints));
    fit::check_log_on_profile(logs.back(), hw);
  }
  // Every plan before the first line (see run_collective's table).
  std::vector<cost::TransferPlan> plans;
  for (const auto& log : logs)
    for (const auto& row : log.points)
      plans.push_back(predicted_plan(f, hw, fit::collective_kind(log.op), log.op, log.ranks, row.bytes));
  auto next_plan = plans.begin();
  nlohmann::ordered_json results = nlohmann::ordered_json::array(), log_list = nlohmann::ordered_json::array();
  std::vector<double> all_errors;
  for (const auto& log : logs) {
    const auto kind = fit::collective_kind(log.op);
    fmt::print(out, "{} · {} on {} ranks{} · {} · predicted on {}\n", log.file, log.op, log.ranks,
               log.nodes > 0 ? fmt::format(" ({} node{})", log.nodes, log.nodes > 1 ? "s" : "") : "",
               log.device.empty() ? "device not named" : log.device, hw.name);
    fmt::print(out, "{:>12} {:>12} {:>12} {:>10} {:>10} {:>8}  {}\n", "size (B)", "measured µs", "predicted µs",
               "busbw", "predicted", "error", "algorithm");
    std::vector<double> errors;
    for (const auto& row : log.points) {
      const cost::TransferPlan& plan = *next_plan++;
      const double t = plan.estimated_s;
      const double algbw = static_cast<double>(row.bytes) / t / 1e9;
      const double busbw = algbw * cost::bus_bandwidth_factor(kind, static_cast<double>(log.ranks));
      // busbw scales as 1/time at a given size: from the times, which the log
      // prints to more digits than its busbw (0.00 GB/s for a few bytes).
      const double error = (row.time_s / t - 1) * 100;
      const std::string algorithm =
          fmt::format("{}/{}", cost::to_string(plan.algorithm), cost::to_string(plan.protocol));
      errors.push_back(std::abs(error));
      fmt::print(out, "{:>12} {:>12.1f} {:>12.1f} {:>10.2f} {:>10.2f} {:>+7.1f}%  {}\n", row.bytes,
                 row.time_s * 1e6, t * 1e6, row.busbw_GBps, busbw, error, algorithm);
      results.push_back({{"log", log.file}, {"line", row.line}, {"op", log.op}, {"ranks", log.ranks},
                         {"bytes", row.bytes}, {"time_s", t}, {"algbw_GBps", algbw}, {"busbw_GBps", busbw},
                         {"algorithm", algorithm}, {"measured_time_s", row.time_s},
                         {"measured_algbw_GBps", row.algbw_GBps}, {"measured_busbw_GBps", row.busbw_GBps},
                         {"busbw_error_pct", error}});
    }
    const auto within = std::count_if(errors.begin(), errors.end(), [](double e) { return e <= 15; });
    fmt::print(out, "{} rows: median |busbw error| {:.1f}%, within 15%: {} of {}\n\n", errors.size(), median(errors),
               within, errors.size());
    log_list.push_back({{"file", log.file}, {"op", log.op}, {"ranks", log.ranks}, {"nodes", log.nodes},
                        {"device", log.device}, {"rows", errors.size()},
                        {"median_abs_busbw_error_pct", median(errors)}, {"within_15_pct", within}});
    all_errors.insert(all_errors.end(), errors.begin(), errors.end());
  }
  const auto within = std::count_if(all_errors.begin(), all_errors.end(), [](double e) { return e <= 15; });
  if (logs.size() > 1)
    fmt::print(out, "summary: {} logs, {} rows: median |busbw error| {:.1f}%, within 15%: {} of {}\n", logs.size(),
               all_errors.size(), median(all_errors), within, all_errors.size());
  if (!f.json_path.empty())
    write_output_file(f.json_path, read, [&](std::ostream& o) {
      nlohmann::ordered_json j;
      j["schema_version"] = 1;
      j["hardware"] = hw.name;
      j["logs"] = log_list;
      j["results"] = results;
      j["summary"] = {{"rows", all_errors.size()},
                      {"median_abs_busbw_error_pct", median(all_errors)},
                      {"within_15_pct", within}};
      o << j.dump(2) << '\n';
    });
  return 0;
}

}  // namespace

int run_collective(const std::vector<std::string>& args, std::ostream& out) {
  Flags f;
  std::string algo;
  const std::string algo_help =
      "the algorithm NCCL_ALGO forced where the log was measured, or to predict: " + cost::algorithm_names() +
      " (default: NCCL's choice)";
  po::options_description options("Options");
  // Boost.Program_options' chained calls, one option a line:
  // clang-format off
  options.add_options()
      ("hw", po::value(&f.hw_path)->value_name("FILE"), "hardware profile")
      ("op", po::value(&f.ops_text)->value_name("OPS"),
       "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv "
       "(comma-separated; default all_reduce; with --compare: the collective of logs that do not name it)")
      ("ranks", po::value(&f.ranks_text)->value_name("LIST"), "group sizes, e.g. 8,16,64")
      ("sizes", po::value(&f.sizes_text)->value_name("LIST"), "message sizes, e.g. 1M,64M,1G")
      ("minbytes,b", po::value(&f.min_text)->value_name("MIN"), "nccl-tests' -b: the smallest size, e.g. 8")
      ("maxbytes,e", po::value(&f.max_text)->value_name("MAX"), "nccl-tests' -e: the largest size (default: -b)")
      ("stepfactor,f", po::value(&f.factor)->value_name("F"), "nccl-tests' -f: sizes grow by F (default 2)")
      ("datatype,d", po::value(&f.datatype)->value_name("TYPE"),
       "nccl-tests' -d, for the count column: float (default), half, bfloat16, double, int8, …")
      ("format", po::value(&f.format)->value_name("FORMAT"),
       "table (default) or nccl-tests (its columns, to set beside its output)")
      ("compare", po::value(&f.compare)->multitoken()->value_name("LOG..."),
       "measured nccl-tests logs: predict each of their rows and set it beside the measurement")
      ("algo", po::value(&algo)->value_name("NAME"), algo_help.c_str())
      ("json", po::value(&f.json_path)->value_name("FILE"), "write the results as JSON")
      ("help,h", "show this help");
  // clang-format on
  po::variables_map vm;
  parse_args(args, options, nullptr, vm, "collective");
  if (vm.count("help")) {
    std::ostringstream text;
    text << options;
    fmt::print(out, "{}{}", kUsage, text.str());
    return 0;
  }
  if (!algo.empty()) {
    f.algo = cost::algorithm_named(algo);
    if (!f.algo)
      throw ConfigError(fmt::format("--algo = {} is not an algorithm; use one of {}", algo, cost::algorithm_names()));
  }
  if (f.hw_path.empty()) throw ConfigError("ptsim collective: --hw FILE is required; see --help");
  if (f.format != "table" && f.format != "nccl-tests")
    throw ConfigError(fmt::format("--format = {} is not a format; use table or nccl-tests", f.format));
  if (!f.compare.empty()) {
    for (const char* flag : {"sizes", "minbytes", "maxbytes", "stepfactor", "format"})
      if (vm.count(flag) && !vm[flag].defaulted())
        throw ConfigError(fmt::format("--compare takes the sizes from the logs; drop --{}", flag));
    config::NcclTestsHints hints;
    if (vm.count("op")) {
      if (split(f.ops_text).size() != 1)
        throw ConfigError("--op: with --compare give one collective, for the logs that do not name theirs");
      hints.op = op_named(f.ops_text).name;
    }
    if (!f.ranks_text.empty()) {
      if (split(f.ranks_text).size() != 1)
        throw ConfigError("--ranks: with --compare give one rank count, for the logs that do not tell theirs");
      hints.ranks = group_size(f.ranks_text);
    }
    return run_compare(f, hints, out);
  }
  if (f.ranks_text.empty()) throw ConfigError("ptsim collective: --ranks LIST is required, e.g. --ranks 8,16,64");
  if (f.sizes_text.empty() == f.min_text.empty())
    throw ConfigError("ptsim collective: give the sizes as --sizes LIST (e.g. --sizes 1M,64M,1G) or as nccl-tests' "
                      "-b MIN -e MAX [-f F], one of the two");
  if (f.min_text.empty() && (vm.count("maxbytes") || vm.count("stepfactor")))
    throw ConfigError("ptsim collective: -e and -f go with -b");

  std::vector<OpInfo> ops;
  for (const auto& name : split(f.ops_text)) ops.push_back(op_named(name));
  std::vector<std::int64_t> group_sizes;
  for (const auto& item : split(f.ranks_text)) {
    group_sizes.push_back(group_size(item));
  }
  std::vector<std::uint64_t> sizes;
  if (!f.sizes_text.empty()) {
    for (const auto& item : split(f.sizes_text)) sizes.push_back(parse_size(item, "--sizes"));
  } else {
    const std::uint64_t min = parse_size(f.min_text, "-b");
    sizes = size_range(min, f.max_text.empty() ? min : parse_size(f.max_text, "-e"), f.factor);
  }
  const std::size_t type_bytes = datatype_bytes(f.datatype);

  // The cluster and the plan's flows take about 1 KiB a rank (1.04 KiB
  // measured at 262,144 and 1,048,576 ranks): refuse a group this machine
  // cannot hold before building it.
  constexpr double kBytesPerRank = 1100;
  const std::int64_t largest = *std::max_element(group_sizes.begin(), group_sizes.end());
  if (const auto available = simulate::available_memory_bytes();
      available && static_cast<double>(largest) * kBytesPerRank > 0.8 * *available)
    throw ConfigError(fmt::format(
        "--ranks: a group of {} ranks would need about {:.1f} GiB, more than this machine can spare "
        "({:.1f} GiB available); ask for fewer ranks",
        largest, static_cast<double>(largest) * kBytesPerRank / (1u << 30), *available / (1u << 30)));

  config::InputFiles read;
  read.record(f.hw_path);
  check_output_paths({{"--json", f.json_path}}, read);
  const hardware::HardwareProfile hw = config::load_hardware(f.hw_path, read);
  const bool nccl_tests = f.format == "nccl-tests";
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  // Every plan before the first line, so that an --algo that cannot run one
  // of them leaves no partial table.
  std::vector<cost::TransferPlan> plans;
  for (const auto& op : ops)
    for (const std::int64_t n : group_sizes)
      for (const std::uint64_t bytes : sizes) plans.push_back(predicted_plan(f, hw, op.kind, op.name, n, bytes));
  auto next_plan = plans.begin();
  fmt::print(out, "{}{} · {}\n", nccl_tests ? "# ptsim collective: " : "", hw.name, hw.description);
  if (!nccl_tests)
    fmt::print(out, "{:<15} {:>6} {:>9} {:>12} {:>12} {:>12}  {}\n", "op", "ranks", "bytes", "time",
               "algbw GB/s", "busbw GB/s", "algorithm");
  for (const auto& op : ops) {
    for (const std::int64_t n : group_sizes) {
      if (nccl_tests) {
        fmt::print(out, "#\n# {} on {} ranks (predicted)\n", op.name, n);
        print_nccl_tests_header(out);
      }
      for (const std::uint64_t bytes : sizes) {
        const cost::TransferPlan& plan = *next_plan++;
        const double t = plan.estimated_s;
        const double algbw = static_cast<double>(bytes) / t / 1e9;
        const double busbw = algbw * cost::bus_bandwidth_factor(op.kind, static_cast<double>(n));
        const std::string algorithm = fmt::format("{}/{}", cost::to_string(plan.algorithm),
                                                  cost::to_string(plan.protocol));
        const std::uint64_t count = element_count(op.kind, bytes, type_bytes, n);
        if (nccl_tests) {
          print_nccl_tests_row(out, bytes, count, f.datatype, op.kind, t, algbw, busbw);
        } else {
          fmt::print(out, "{:<15} {:>6} {:>9} {:>9.1f} µs {:>12.2f} {:>12.2f}  {}\n", op.name, n,
                     human_bytes(bytes), t * 1e6, algbw, busbw, algorithm);
        }
        results.push_back({{"op", op.name}, {"ranks", n}, {"bytes", bytes}, {"count", count},
                           {"type", f.datatype}, {"time_s", t}, {"algbw_GBps", algbw}, {"busbw_GBps", busbw},
                           {"algorithm", algorithm}});
      }
    }
  }
  if (!f.json_path.empty())
    write_output_file(f.json_path, read, [&](std::ostream& o) {
      nlohmann::ordered_json j;
      j["schema_version"] = 1;
      j["hardware"] = hw.name;
      j["results"] = results;
      o << j.dump(2) << '\n';
    });
  return 0;
}

}  // namespace ptsim::cli

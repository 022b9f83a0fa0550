// `ptsim collective`: one collective alone on a cluster, for every group size
// and message size asked, reported with nccl-tests' conventions so that it
// can be set beside a user's own nccl-tests output.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "parse_args.hpp"
#include "sizes.hpp"
#include "output_file.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/load_hardware.hpp"
#include "ptsim/cost/collective_algorithms.hpp"
#include "ptsim/cost/isolated_collective.hpp"
#include "ptsim/simulate/simulation_memory.hpp"

namespace ptsim::cli {

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage = R"(Usage: ptsim collective --hw FILE --op OP --ranks LIST --sizes LIST [--json FILE]

Predicts one collective alone on the cluster of a hardware profile: the
algorithm and protocol NCCL would pick, the time, and nccl-tests' algorithm
and bus bandwidths (busbw = algbw · 2(n−1)/n for all_reduce; · (n−1)/n for
all_gather, reduce_scatter and all_to_all; = algbw for broadcast, reduce and
send_recv). The ranks are 0 … n−1, filling nodes in order, as nccl-tests runs
on n GPUs. Sizes follow nccl-tests: the all-reduce buffer, the all-gather
output, the reduce-scatter input; K, M, G are powers of 1024.

Example:
  ptsim collective --hw hw_profiles/h100-sxm5-80gb.json --op all_reduce \
      --ranks 8,16,64,1024 --sizes 1M,16M,256M,1G --json allreduce.json

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

}  // namespace

int run_collective(const std::vector<std::string>& args, std::ostream& out) {
  std::string hw_path, ops_text = "all_reduce", ranks_text, sizes_text, json_path;
  po::options_description options("Options");
  options.add_options()
      ("hw", po::value(&hw_path)->value_name("FILE"), "hardware profile")
      ("op", po::value(&ops_text)->value_name("OPS"),
       "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv "
       "(comma-separated; default all_reduce)")
      ("ranks", po::value(&ranks_text)->value_name("LIST"), "group sizes, e.g. 8,16,64")
      ("sizes", po::value(&sizes_text)->value_name("LIST"), "message sizes, e.g. 1M,64M,1G")
      ("json", po::value(&json_path)->value_name("FILE"), "write the results as JSON")
      ("help,h", "show this help");
  po::variables_map vm;
  parse_args(args, options, nullptr, vm, "collective");
  if (vm.count("help")) {
    std::ostringstream text;
    text << options;
    fmt::print(out, "{}{}", kUsage, text.str());
    return 0;
  }
  if (hw_path.empty()) throw ConfigError("ptsim collective: --hw FILE is required; see --help");
  if (ranks_text.empty()) throw ConfigError("ptsim collective: --ranks LIST is required, e.g. --ranks 8,16,64");
  if (sizes_text.empty()) throw ConfigError("ptsim collective: --sizes LIST is required, e.g. --sizes 1M,64M,1G");

  std::vector<OpInfo> ops;
  for (const auto& name : split(ops_text)) {
    const auto it = std::find_if(std::begin(kOps), std::end(kOps), [&](const OpInfo& o) { return name == o.name; });
    if (it == std::end(kOps))
      throw ConfigError(fmt::format("--op: '{}' is not a collective; use all_reduce, all_gather, "
                                    "reduce_scatter, all_to_all, broadcast, reduce or send_recv", name));
    ops.push_back(*it);
  }
  std::vector<std::int64_t> group_sizes;
  for (const auto& item : split(ranks_text)) {
    std::size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || n < 2 || n > (1 << 24))
      throw ConfigError(fmt::format("--ranks: '{}' is not a group size in [2, 16777216]", item));
    group_sizes.push_back(n);
  }
  std::vector<std::uint64_t> sizes;
  for (const auto& item : split(sizes_text)) sizes.push_back(parse_size(item, "--sizes"));

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

  check_output_paths({{"--json", json_path}}, {hw_path});
  const hardware::HardwareProfile hw = config::load_hardware(hw_path);
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  fmt::print(out, "{} · {}\n", hw.name, hw.description);
  fmt::print(out, "{:<15} {:>6} {:>9} {:>12} {:>12} {:>12}  {}\n", "op", "ranks", "bytes", "time",
             "algbw GB/s", "busbw GB/s", "algorithm");
  for (const auto& op : ops) {
    for (const std::int64_t n : group_sizes) {
      for (const std::uint64_t bytes : sizes) {
        const cost::TransferPlan plan = cost::isolated_collective(hw, op.kind, n, bytes);
        const double t = plan.estimated_s;
        const double algbw = static_cast<double>(bytes) / t / 1e9;
        const double busbw = algbw * cost::bus_bandwidth_factor(op.kind, static_cast<double>(n));
        const std::string algorithm = fmt::format("{}/{}", cost::to_string(plan.algorithm),
                                                  cost::to_string(plan.protocol));
        fmt::print(out, "{:<15} {:>6} {:>9} {:>9.1f} µs {:>12.2f} {:>12.2f}  {}\n", op.name, n,
                   human_bytes(bytes), t * 1e6, algbw, busbw, algorithm);
        results.push_back({{"op", op.name}, {"ranks", n}, {"bytes", bytes}, {"time_s", t},
                           {"algbw_GBps", algbw}, {"busbw_GBps", busbw}, {"algorithm", algorithm}});
      }
    }
  }
  if (!json_path.empty())
    write_output_file(json_path, {hw_path}, [&](std::ostream& o) {
      nlohmann::ordered_json j;
      j["schema_version"] = 1;
      j["hardware"] = hw.name;
      j["results"] = results;
      o << j.dump(2) << '\n';
    });
  return 0;
}

}  // namespace ptsim::cli

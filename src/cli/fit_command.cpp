// `ptsim fit`: a hardware profile's declared physical parameters fitted to
// what a user measured — step times of training runs (ptsim-runs/1) or
// nccl-tests logs — written as a new profile with a "fit" block.
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "fit_output.hpp"
#include "output_file.hpp"
#include "parse_args.hpp"
#include "run_inputs.hpp"
#include "shipped_files.hpp"
#include "sizes.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/load_hardware.hpp"
#include "ptsim/config/load_nccl_tests.hpp"
#include "ptsim/config/load_runs.hpp"
#include "ptsim/config/load_software.hpp"
#include "ptsim/config/load_stack.hpp"
#include "ptsim/fit/fit_collectives.hpp"
#include "ptsim/fit/fit_runs.hpp"

namespace ptsim::cli {

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    R"(Usage: ptsim fit --runs FILE --hw PROFILE --out PROFILE [--json FILE] [--params LIST] [--exclude GLOB]...
                 [--stack STACK [--out-stack FILE]]
       ptsim fit --nccl-tests LOG [LOG...] --hw PROFILE --out PROFILE [--json FILE] [--params LIST] [--op OP]
                 [--ranks N] [--min-bytes SIZE]

Fits the small, declared set of physical parameters of PROFILE that the
measurements constrain, by least squares on log(predicted / measured), and
writes the profile with the fitted values (each naming this fit as its
source) and a "fit" block: the parameters with value and standard error, the
runs or log points used, the median and max |error| before and after.

From step times (--runs, schema ptsim-runs/1): the runs on PROFILE (their
"hardware" is its name); what a run left null is chosen as ptsim validate
chooses it, on the starting profile and again on the fitted one. From
nccl-tests logs (--nccl-tests): the output of all_reduce_perf, all_gather_perf,
reduce_scatter_perf, alltoall_perf as printed; the rank count and the nodes
come from the log's "# Rank" lines, sizes and times from its table (out of
place); --op names the collective of a log that does not say, --ranks the rank
count of one whose rank lines were cut and whose table cannot tell it.

Parameters (--params, default: all of them, each refused with its reason when
the measurements cannot identify it; a named one that cannot be is an error):
  sustained.tensor.bf16   sustained.tensor.fp8   sustained.memory
  nvlink.efficiency   nvlink.latency   nvlink.nvls_efficiency   nvlink.nvls_latency
  nic.efficiency   nic.latency
  host.overhead_us (step times only: the host's time to issue each kernel or
    collective, written to /node/host_overhead_us and used by runs that set
    no host_overhead_us)
A parameter is refused when no measurement exercises it (a cross-node figure
from single-node runs), when no prediction moves by 0.01% for a 1% change of
it, or when the measurements cannot tell it apart from another one. When
every parameter is refused, nothing is written but --json, and the exit
status is 2.

A framework's host time: with --stack every run is simulated under that
software stack (a shipped name or a ptsim-stack/1 file) instead of
--software's per-source settings, the stack's own host_overhead_us set
aside; --out-stack FILE writes the stack, named after FILE, with the fitted
host.overhead_us as its host_overhead_us and this fit as its evidence. --out
may then be left out when host.overhead_us is the only parameter.

Examples:
  ptsim fit --runs my_runs.json --hw hw_profiles/h100-sxm5-80gb.json --out h100-fitted.json
  ptsim fit --runs validation/published_runs.json --hw hw_profiles/a100-sxm4-80gb.json \
      --exclude 'narayanan21-t2-zero3-*' --params sustained.tensor.bf16 --out a100.json
  ptsim fit --runs my_runs.json --hw hw_profiles/h100-sxm5-80gb.json --stack torchtitan-2024-12 \
      --params host.overhead_us --out-stack my-torchtitan.json
  ptsim fit --nccl-tests ar-2nodes.log ar-1node.log --hw hw_profiles/h100-sxm5-80gb.json --out h100-net.json \
      --min-bytes 64M

)";

// Every run under one stack: a software source matching every run id, with
// the stack's settings less its own host time, which the fit replaces.
std::vector<config::SoftwareProfile> under_stack(const std::string& stack_file, config::InputFiles& read,
                                                 const std::function<void(const std::string&)>& progress) {
  const config::SoftwareStack stack = config::load_stack(stack_file, read);
  config::SoftwareProfile all;
  all.framework = stack.framework;
  all.stack = stack.name;
  all.settings = stack.settings;
  if (all.settings.host_overhead_us) {
    progress(fmt::format("fit: stack {}'s own host_overhead_us ({:g} µs) set aside: the fit replaces it", stack.name,
                         *all.settings.host_overhead_us));
    all.settings.host_overhead_us.reset();
  }
  all.evidence = {fmt::format("ptsim fit --stack {}", stack_file)};
  return {all};
}

// The stack with the fitted host time, named after its file, the fit as its
// evidence; a refusal to fit it is an error (nothing is written).
std::string fitted_stack_text(const std::string& stack_file, const std::string& out_path, config::InputFiles& read,
                              const FitOutput& result, const std::string& runs_path,
                              const hardware::HardwareProfile& profile) {
  const auto& params = result.record.parameters;
  const auto host = std::find_if(params.begin(), params.end(),
                                 [](const hardware::FittedParameter& p) { return p.name == "host.overhead_us"; });
  if (host == params.end()) {
    const auto& refused = result.record.refused;
    const auto why = std::find_if(refused.begin(), refused.end(),
                                  [](const hardware::RefusedParameter& p) { return p.name == "host.overhead_us"; });
    throw ConfigError(fmt::format("ptsim fit: --out-stack: host.overhead_us was not fitted{}; nothing written",
                                  why != refused.end() ? " (" + why->why + ")" : ""));
  }
  const double value = std::round(host->value * 10) / 10;
  const std::string evidence = fmt::format(
      "ptsim fit on {} ({} run(s) on {}): {:g} µs{} per kernel or collective issued, pinned by {}; median |error| "
      "{:.1f}% → {:.1f}%, max {:.1f}% → {:.1f}%",
      runs_path, result.record.points.size(), profile.name, value,
      host->standard_error ? fmt::format(" ± {:.2g} (standard error)", *host->standard_error) : "",
      fmt::join(host->pinned_by, ", "), result.record.median_abs_error_before_pct,
      result.record.median_abs_error_after_pct, result.record.max_abs_error_before_pct,
      result.record.max_abs_error_after_pct);
  return config::fitted_stack_json(stack_file, read, std::filesystem::path(out_path).stem().string(), value, evidence);
}

}  // namespace

int run_fit(const std::vector<std::string>& args, std::ostream& out) {
  std::string runs_path, hw_path, out_path, json_path, params, op, min_bytes_text, stack_arg, out_stack_path;
  std::string software_path = shipped_file("validation/software.json");
  std::vector<std::string> logs, excludes;
  std::int64_t log_ranks = 0;
  po::options_description options("Options");
  // clang-format off
  options.add_options()
      ("runs", po::value(&runs_path)->value_name("FILE"), "measured steps (ptsim-runs/1)")
      ("nccl-tests", po::value(&logs)->multitoken()->value_name("LOG..."), "nccl-tests output, as printed")
      ("hw", po::value(&hw_path)->value_name("PROFILE"), "the hardware profile to fit")
      ("out", po::value(&out_path)->value_name("PROFILE"), "the fitted profile to write")
      ("json", po::value(&json_path)->value_name("FILE"), "write the fit (parameters, points, errors) as JSON")
      ("params", po::value(&params)->value_name("LIST"), "comma-separated parameters to fit (default: all)")
      ("exclude", po::value(&excludes)->value_name("GLOB"),
       "with --runs: leave out runs whose id matches (shell pattern; repeatable)")
      ("software", po::value(&software_path)->value_name("FILE"),
       "with --runs: what each source's framework ran (default: the shipped validation/software.json)")
      ("stack", po::value(&stack_arg)->value_name("STACK"),
       "with --runs: simulate every run under this software stack (a shipped name or a file) instead of "
       "--software's sources")
      ("out-stack", po::value(&out_stack_path)->value_name("FILE"),
       "with --stack: write the stack with the fitted host.overhead_us as its host_overhead_us")
      ("op", po::value(&op)->value_name("OP"),
       "with --nccl-tests: the collective of logs that do not name it (all_reduce, all_gather, reduce_scatter, "
       "alltoall)")
      ("ranks", po::value(&log_ranks)->value_name("N"),
       "with --nccl-tests: the rank count of logs whose rank lines were cut and whose table cannot tell it")
      ("min-bytes", po::value(&min_bytes_text)->value_name("SIZE"),
       "with --nccl-tests: fit only the rows of at least this size (K, M, G: powers of 1024), e.g. 64M to "
       "fit bandwidths on the sizes they dominate")
      ("quiet,q", "no progress on standard error")
      ("help,h", "show this help");
  // clang-format on
  po::variables_map vm;
  parse_args(args, options, nullptr, vm, "fit");
  if (vm.count("help")) {
    std::ostringstream text;
    text << options;
    fmt::print(out, "{}{}", kUsage, text.str());
    return 0;
  }
  if (runs_path.empty() == logs.empty())
    throw ConfigError("ptsim fit: give either --runs FILE or --nccl-tests LOG...; see --help");
  if (hw_path.empty()) throw ConfigError("ptsim fit: --hw PROFILE is required; see --help");
  const std::vector<std::string> names = comma_list(params);
  const bool fits_host = names.empty() || std::find(names.begin(), names.end(), "host.overhead_us") != names.end();
  if (!stack_arg.empty() && runs_path.empty()) throw ConfigError("ptsim fit: --stack goes with --runs");
  if (!stack_arg.empty() && vm.count("software"))
    throw ConfigError("ptsim fit: give --stack or --software, not both: --stack puts every run under one stack");
  if (!out_stack_path.empty() && stack_arg.empty())
    throw ConfigError("ptsim fit: --out-stack needs --stack STACK, the stack whose host time is fitted");
  if (!out_stack_path.empty() && !fits_host)
    throw ConfigError("ptsim fit: --out-stack writes the fitted host.overhead_us; add it to --params");
  if (out_path.empty() && out_stack_path.empty()) throw ConfigError("ptsim fit: --out PROFILE is required; see --help");
  if (out_path.empty() && names != std::vector<std::string>{"host.overhead_us"})
    throw ConfigError(
        "ptsim fit: without --out only the stack's host time is written: give --params host.overhead_us, or "
        "--out PROFILE for the profile's fitted figures");
  if (!excludes.empty() && runs_path.empty()) throw ConfigError("ptsim fit: --exclude goes with --runs");
  if (!op.empty() && logs.empty()) throw ConfigError("ptsim fit: --op goes with --nccl-tests");
  if (!min_bytes_text.empty() && logs.empty()) throw ConfigError("ptsim fit: --min-bytes goes with --nccl-tests");
  if (vm.count("ranks") && logs.empty()) throw ConfigError("ptsim fit: --ranks goes with --nccl-tests");
  if (vm.count("ranks") && (log_ranks < 2 || log_ranks > (1 << 24)))
    throw ConfigError(fmt::format("ptsim fit: --ranks = {} must lie in [2, 16777216]", log_ranks));
  config::NcclTestsHints hints{op, vm.count("ranks") ? std::optional<std::int64_t>(log_ranks) : std::nullopt};
  const std::uint64_t min_bytes = min_bytes_text.empty() ? 0 : parse_size(min_bytes_text, "--min-bytes");
  for (const auto& n : names) fit::parameter(n);  // a ConfigError listing the names
  config::InputFiles read;
  for (const std::string& path : {hw_path, runs_path, software_path}) read.record(path);
  for (const std::string& log : logs) read.record(log);
  const std::string stack_file = stack_arg.empty() ? "" : stack_path(stack_arg);
  if (!stack_file.empty()) read.record(stack_file);
  check_output_paths({{"--out", out_path}, {"--out-stack", out_stack_path}, {"--json", json_path}}, read);
  const hardware::HardwareProfile profile = config::load_hardware(hw_path, read);
  const bool quiet = vm.count("quiet") > 0;
  const auto progress = [&](const std::string& line) {
    if (!quiet) fmt::print(stderr, "{}\n", line);
  };

  FitOutput result;
  if (!runs_path.empty()) {
    config::PublishedRuns runs = config::load_runs(runs_path, read);
    std::vector<std::string> excluded;
    std::erase_if(runs.runs, [&](const config::PublishedRun& r) {
      if (!fit::id_matches(excludes, r.id)) return false;
      excluded.push_back(r.id);
      return true;
    });
    const auto software =
        stack_file.empty() ? config::load_software(software_path, read) : under_stack(stack_file, read, progress);
    const fit::RunFitResult r = fit::fit_runs(runs, profile, software, {.parameters = names}, progress);
    result = from_runs(r, profile, excluded, excludes);
  } else {
    std::vector<config::NcclTestsLog> parsed;
    for (const auto& log : logs) {
      parsed.push_back(config::load_nccl_tests(log, read, hints));
      auto& points = parsed.back().points;
      std::erase_if(points, [&](const config::NcclTestsPoint& p) { return p.bytes < min_bytes; });
      if (points.empty())
        throw ConfigError(fmt::format("{}: no row of at least --min-bytes {} bytes", log, min_bytes));
    }
    const fit::CollectiveFitResult r = fit::fit_collectives(parsed, profile, {.parameters = names}, progress);
    result = from_collectives(r, profile);
  }
  print_fit(out, result);
  const auto write_report = [&] {
    if (!json_path.empty())
      write_output_file(json_path, read, [&](std::ostream& o) { o << fit_json(result).dump(2) << '\n'; });
  };
  // A profile with nothing fitted would be PROFILE under a "fit" block that
  // claims a calibration: none is written. The report (--json) says why.
  if (result.record.parameters.empty()) {
    write_report();
    const bool small_sizes = !logs.empty() && min_bytes < (std::uint64_t{256} << 20);
    throw ConfigError(
        fmt::
            format("ptsim fit: nothing was fitted (each parameter's reason is above), so no profile is written{}{}",
                   json_path.empty() ? "" : fmt::format("; the report is in {}", json_path),
                   small_sizes
                       ? "; a log's small sizes, whose time is mostly fixed, can hide the bandwidth: fitting its large "
                         "messages alone (--min-bytes 256M) identifies nic.efficiency where the fabric sets it"
                       : ""));
  }
  // Every output is made before any is written: whole or absent.
  const std::string profile_text =
      out_path.empty() ? "" : config::fitted_profile_json(hw_path, read, fitted_figures(result), result.record);
  const std::string stack_text =
      out_stack_path.empty() ? "" : fitted_stack_text(stack_file, out_stack_path, read, result, runs_path, profile);
  if (!out_path.empty()) write_output_file(out_path, read, [&](std::ostream& o) { o << profile_text; });
  if (!out_stack_path.empty()) write_output_file(out_stack_path, read, [&](std::ostream& o) { o << stack_text; });
  write_report();
  for (const std::string& path : {out_path, out_stack_path})
    if (!path.empty()) fmt::print(out, "wrote {}\n", path);
  return 0;
}

}  // namespace ptsim::cli

// `ptsim plan` (strategy search) and `ptsim merge` (shard results into one).
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "parse_args.hpp"
#include "output_file.hpp"
#include "plan_output.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/load_hardware.hpp"
#include "ptsim/config/load_model.hpp"
#include "ptsim/config/strategy_input.hpp"
#include "ptsim/plan/planner.hpp"
#include "ptsim/strategy/schedule.hpp"
#include "run_inputs.hpp"
#include "search_progress.hpp"

namespace ptsim::cli {

namespace po = boost::program_options;

namespace {

constexpr const char* kPlanUsage = R"(Usage: ptsim plan --model FILE --hw FILE --gpus N --global-batch-size B [options]
       ptsim plan --hw FILE --gpus N [options] -- MEGATRON-ARGS...

After --, a Megatron-LM launch line's arguments give the model (as ptsim
simulate --help describes), the global batch and the framework's settings
(precision, overlaps, attention kernels); the parallel layout it names (TP,
PP, CP, EP, interleaving, micro-batch, SP, recomputation, ZeRO) is what the
search looks for, so it is left out of the fixed choices.

Searches every valid strategy — tp, pp, dp, cp, ep, interleaving, micro-batch
size, schedule, recomputation, sequence parallelism, ZeRO stage — keeps those
that fit in memory and ranks them by simulated step time. Strategy flags given
(e.g. --tp 8, --precision fp8) pin that choice; the rest is searched (over
--kernel-fusion eager or compiled, torchtitan's --recompute op too; under --fsdp, ZeRO-3 only).
Candidates are bounded first (static memory plus the activations their
schedule must hold; a lower bound on step time) and simulated in bound order
on every core until no bound can beat the K-th best: the ranking equals
exhaustive simulation's.

Pipeline schedules: by default those Megatron-LM can run, 1F1B and
interleaved 1F1B (its get_forward_backward_func has no other); --schedules
widens or narrows the search (naive, gpipe, 1f1b, interleaved, zb-h1, zb-h2,
dualpipe), and --schedule NAME pins one. With --stack, the stack's schedules
are the default and the limit. A strategy that is another's run
under another name (ZeRO 1 on one data-parallel rank) is searched once.

Examples:
  ptsim plan --model configs/models/gpt3-175b.json --hw hw_profiles/dgx-a100-superpod.json \
      --gpus 1024 --global-batch-size 1536 --top 5
  ptsim plan --model configs/models/llama3-70b.json --hw hw_profiles/dgx-h100-superpod.json \
      --gpus 512 --global-batch-size 512 --seq-length 8192 --json plan.json --csv plan.csv
  ptsim plan --model configs/models/llama3-70b.json --hw hw_profiles/dgx-h100-superpod.json \
      --gpus 512 --global-batch-size 512 --schedules 1f1b,interleaved,zb-h1,dualpipe
  ptsim plan ... --shard 0/4 --json part0.json   # then: ptsim merge part*.json --json plan.json

)";

constexpr const char* kMergeUsage = R"(Usage: ptsim merge FILE... [--top K] [--json OUT] [--csv OUT]

Merges the JSON outputs of a sharded search (ptsim plan --shard I/N) into the
ranking the unsharded search gives: the best K of the union, ties broken by
enumeration order, counts summed.

Example:
  ptsim merge part0.json part1.json part2.json part3.json --top 10 --json plan.json

)";

plan::Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  plan::Shard s;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    std::size_t used = 0;
    s.index = std::stoll(text.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("trailing");
    const std::string count = text.substr(slash + 1);
    s.count = std::stoll(count, &used);
    if (used != count.size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw ConfigError(fmt::format("--shard {}: expected I/N, e.g. 0/4 (shard I of N, 0 ≤ I < N)", text));
  }
  if (s.count < 1 || s.index < 0 || s.index >= s.count)
    throw ConfigError(fmt::format("--shard {}: shard {} of {} does not exist; use 0 ≤ I < N", text, s.index, s.count));
  return s;
}


// --schedules: names the strategy reader accepts for --schedule, each once.
std::vector<std::string> parse_schedules(const std::string& text) {
  const std::vector<std::string_view> names = strategy::schedule_names();
  std::vector<std::string> out;
  for (const auto& name : comma_list(text)) {
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw ConfigError(fmt::format("--schedules: '{}' is not a schedule; use {}", name, fmt::join(names, ", ")));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  if (out.empty()) throw ConfigError("--schedules: give at least one schedule, e.g. --schedules 1f1b,interleaved");
  return out;
}

}  // namespace

int run_plan(const std::vector<std::string>& args, std::ostream& out) {
  RunInputs inputs;
  std::string json, csv, objective = "time", shard_text, schedules_text;
  std::size_t top = 10;
  unsigned threads = 0;
  double price = 0;
  po::options_description search("Search and outputs");
  search.add_options()
      ("top", po::value(&top)->value_name("K"), "candidates to rank (default 10)")
      ("objective", po::value(&objective)->value_name("time|cost"), "rank by step time (default) or cost")
      ("price-per-gpu-hour", po::value(&price)->value_name("USD"), "for --objective cost and the cost column")
      ("threads", po::value(&threads)->value_name("N"), "simulation threads (default: every core)")
      ("shard", po::value(&shard_text)->value_name("I/N"), "search only part I of N (merge the parts with ptsim merge)")
      ("schedules", po::value(&schedules_text)->value_name("LIST"),
       "pipeline schedules to search, comma-separated (default 1f1b,interleaved: Megatron-LM's)")
      ("json", po::value(&json)->value_name("FILE"), "write the ranking as JSON")
      ("csv", po::value(&csv)->value_name("FILE"), "write the ranking as CSV")
      ("quiet,q", "no progress on standard error (a bar on a terminal, else a line every 5 s)")
      ("timing", "also report how long the search took (console and --json wall_s); without it "
                 "every output is byte-identical from run to run and at any --threads")
      ("help,h", "show this help");
  po::options_description options;
  options.add(input_options(inputs)).add(strategy_options()).add(search);
  po::variables_map vm;
  parse_args(split_megatron_args(args, inputs), options, nullptr, vm, "plan");
  if (vm.count("help")) {
    std::ostringstream text;
    text << options;
    fmt::print(out, "{}{}", kPlanUsage, text.str());
    return 0;
  }
  if (inputs.hw.empty()) throw ConfigError("ptsim plan: --hw FILE is required; see --help");
  if (objective != "time" && objective != "cost")
    throw ConfigError(fmt::format("--objective = {} is not an objective; use time or cost", objective));
  if (top < 1 || top > 100000) throw ConfigError(fmt::format("--top = {} must lie in [1, 100000]", top));
  config::InputFiles read;
  record_files(inputs, read);
  // Before the search: a bad output path fails now, not after minutes of it.
  check_output_paths({{"--json", json}, {"--csv", csv}}, read);
  plan::PlanRequest request;
  const std::optional<config::SoftwareStack> stack = stack_input(inputs, read);
  request.fixed = strategy_input(inputs, read, vm, stack);
  request.model = load_model_input(inputs, read, request.fixed, "ptsim plan", LaunchLayout::Search);
  request.hardware = load_hardware_input(inputs, read);
  if (!request.fixed.gpus) throw ConfigError("ptsim plan: --gpus N is required; see --help");
  if (!request.fixed.global_batch_size) throw ConfigError("ptsim plan: --global-batch-size B is required; see --help");
  request.gpus = *request.fixed.gpus;
  request.global_batch_size = *request.fixed.global_batch_size;
  request.seq_length = request.fixed.seq_length;
  request.top = top;
  request.objective = objective == "cost" ? plan::Objective::Cost : plan::Objective::Time;
  if (request.objective == plan::Objective::Cost && !(price > 0))
    throw ConfigError("--objective cost needs --price-per-gpu-hour USD > 0");
  request.price_per_gpu_hour = price;
  request.threads = threads;
  if (!shard_text.empty()) request.shard = parse_shard(shard_text);
  if (vm.count("schedules")) request.schedules = parse_schedules(schedules_text);
  // A stack runs only its own schedules: the default search, and a limit on --schedules.
  if (stack && !stack->schedules.empty()) {
    if (request.schedules.empty()) request.schedules = stack->schedules;
    for (const auto& name : request.schedules)
      if (std::find(stack->schedules.begin(), stack->schedules.end(), name) == stack->schedules.end())
        throw ConfigError(fmt::format("--schedules: stack {} cannot run {}; it runs {}", stack->name, name,
                                      fmt::join(stack->schedules, ", ")));
  }

  plan::PlanResult result;
  {
    SearchProgressReporter progress("ptsim plan", vm.count("quiet") == 0);
    result = plan::plan(request, progress.callback());
  }
  if (vm.count("timing") == 0) result.wall_s.reset();
  print_plan(result, request, out);
  std::vector<OutputFile> outputs;
  if (!json.empty()) outputs.push_back({json, [&](std::ostream& o) { o << plan_json(result, request).dump(2) << '\n'; }});
  if (!csv.empty()) outputs.push_back({csv, [&](std::ostream& o) { o << plan_csv(plan_json(result, request)); }});
  write_output_files(outputs, read);
  if (result.best.empty()) {
    fmt::print(stderr, "ptsim plan: no strategy fits in memory on {} GPUs; try more GPUs or a smaller batch\n",
               request.gpus);
    return 3;
  }
  return 0;
}

int run_merge(const std::vector<std::string>& args, std::ostream& out) {
  std::vector<std::string> files;
  std::string json, csv;
  std::size_t top = 0;
  po::options_description options("Options");
  options.add_options()
      ("files", po::value(&files)->multitoken(), "shard outputs of ptsim plan --json")
      ("top", po::value(&top)->value_name("K"), "candidates to keep (default: the shards' K)")
      ("json", po::value(&json)->value_name("FILE"), "write the merged ranking as JSON")
      ("csv", po::value(&csv)->value_name("FILE"), "write the merged ranking as CSV")
      ("help,h", "show this help");
  po::positional_options_description positional;
  positional.add("files", -1);
  po::variables_map vm;
  parse_args(args, options, &positional, vm, "merge");
  if (vm.count("help")) {
    std::ostringstream text;
    text << options;
    fmt::print(out, "{}{}", kMergeUsage, text.str());
    return 0;
  }
  if (files.empty()) throw ConfigError("ptsim merge: give the shard files to merge; see --help");
  config::InputFiles read;
  for (const auto& f : files) read.record(f);
  check_output_paths({{"--json", json}, {"--csv", csv}}, read);
  const nlohmann::ordered_json merged = merge_plan_files(files, top);
  fmt::print(out, "{}", plan_table(merged));
  std::vector<OutputFile> outputs;
  if (!json.empty()) outputs.push_back({json, [&](std::ostream& o) { o << merged.dump(2) << '\n'; }});
  if (!csv.empty()) outputs.push_back({csv, [&](std::ostream& o) { o << plan_csv(merged); }});
  write_output_files(outputs, read);
  return 0;
}

}  // namespace ptsim::cli

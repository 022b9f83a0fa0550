// `ptsim simulate`: flags → inputs → simulate_step → terminal, JSON, trace.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <optional>
#include <sstream>

#include "commands.hpp"
#include "parse_args.hpp"
#include "output_file.hpp"
#include "run_inputs.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/common/parse_number.hpp"
#include "ptsim/report/chrome_trace.hpp"
#include "ptsim/report/console_report.hpp"
#include "ptsim/report/json_report.hpp"
#include "ptsim/simulate/simulate_step.hpp"

namespace ptsim::cli {

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage = R"(Usage: ptsim simulate --model FILE --hw FILE [strategy] [outputs]
       ptsim simulate --hw FILE --gpus N [strategy] [outputs] -- MEGATRON-ARGS...

Simulates one training step of a model on a cluster under a parallel strategy,
event by event on every GPU rank, and reports step time, its breakdown, memory
per GPU and communication.

After --, the arguments a Megatron-LM launch line hands pretrain_gpt.py, as
pasted: the model comes from its architecture flags (--num-layers,
--hidden-size, --num-attention-heads, --seq-length, --max-position-embeddings,
--swiglu, --num-query-groups, ...; GPT-2's BPE vocabulary of 50,257, else
--vocab-size, padded as Megatron pads it), the strategy from its parallelism,
batch, precision, recomputation and overlap flags. Flags that do not change a
step (data, logging, checkpoints, learning rate, seeds) are listed as ignored;
a flag Megatron-LM does not have is refused. The world size is --gpus, as
torchrun's --nproc_per_node × --nnodes; ptsim flags given before -- win where
they agree with Megatron's and are an error where they do not.

Examples:
  ptsim simulate --model configs/models/gpt3-175b.json --hw hw_profiles/a100-sxm4-80gb.json \
      --gpus 1024 --tp 8 --pp 8 --micro-batch-size 1 --global-batch-size 1536 --schedule 1f1b
  ptsim simulate --model configs/models/bert-large.json --hw hw_profiles/a100-sxm4-80gb.json \
      --gpus 4 --pp 4 --global-batch-size 16 --micro-batch-size 4 --schedule gpipe --json out.json
  ptsim simulate --model configs/models/llama3-8b.json --hw hw_profiles/h100-sxm5-80gb.json \
      --strategy my-strategy.json --trace step.trace.json
  ptsim simulate --model configs/models/gpt3-175b.json --hw hw_profiles/dgx-a100-superpod.json \
      --gpus 1024 --tp 8 --pp 8 --global-batch-size 1536 --slow-gpu 17:1.2 --slow-link nic:300:4
  ptsim simulate --hw hw_profiles/h100-sxm5-80gb.json --gpus 8 -- --num-layers 32 --hidden-size 4096 \
      --num-attention-heads 32 --group-query-attention --num-query-groups 8 --ffn-hidden-size 14336 \
      --swiglu --normalization RMSNorm --position-embedding-type rope --seq-length 8192 \
      --max-position-embeddings 8192 --untie-embeddings-and-output-weights --disable-bias-linear \
      --vocab-size 128256 --micro-batch-size 1 --global-batch-size 128 --bf16 --use-distributed-optimizer

Exit codes: 0 the step was simulated and fits in memory · 2 invalid input ·
3 the strategy does not fit in HBM (the report and its JSON, memory.fits
false, are still written; --allow-oom makes this 0) or cannot be simulated.

)";

struct Flags {
  RunInputs inputs;
  std::string json, trace, trace_ranks, mode = "auto";
  bool allow_oom = false;
  std::vector<std::string> slow_gpus, slow_links;
  bool timing = false;
};

po::options_description describe(Flags& f) {
  po::options_description outputs("Simulation and outputs");
  outputs.add_options()
      ("mode", po::value(&f.mode)->value_name("MODE"),
       "auto (default: symmetric above 64 GPUs when exact) | explicit (every rank) | symmetric "
       "(one rank per pipeline stage; exact when all peers of a stage see the same network)")
      ("slow-gpu", po::value(&f.slow_gpus)->value_name("RANK:FACTOR")->composing(),
       "what-if: kernels on RANK take FACTOR times longer (repeatable; explicit mode)")
      ("slow-link", po::value(&f.slow_links)->value_name("KIND:INDEX:FACTOR")->composing(),
       "what-if: divide a link's bandwidth by FACTOR; KIND is nic or nvlink (INDEX a rank) or "
       "pod (INDEX a pod's uplink and downlink) (repeatable; explicit mode)")
      ("json", po::value(&f.json)->value_name("FILE"), "write the report as JSON")
      ("trace", po::value(&f.trace)->value_name("FILE"), "write a Chrome trace (Perfetto, chrome://tracing)")
      ("trace-ranks", po::value(&f.trace_ranks)->value_name("LIST"),
       "ranks in the trace: comma-separated, or 'all' (default: all up to 16 ranks, else the "
       "first rank of each stage)")
      ("allow-oom", po::bool_switch(&f.allow_oom),
       "exit 0 even when the strategy does not fit in memory (default: exit 3, so that a script or CI "
       "catches it)")
      ("timing", po::bool_switch(&f.timing),
       "also report how long the simulation took (console and --json simulation.wall_s); "
       "without it every output is byte-identical from run to run")
      ("help,h", "show this help");
  po::options_description all;
  all.add(input_options(f.inputs)).add(strategy_options()).add(outputs);
  return all;
}

// "RANK:FACTOR" (--slow-gpu) or "KIND:INDEX:FACTOR" (--slow-link).
simulate::Degradation parse_degradation(const std::string& text, bool link) {
  using Kind = simulate::Degradation::Kind;
  const char* flag = link ? "--slow-link" : "--slow-gpu";
  const char* form = link ? "KIND:INDEX:FACTOR with KIND nic, nvlink or pod, e.g. nic:12:4"
                          : "RANK:FACTOR, e.g. 17:1.5";
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ':');) parts.push_back(part);
  simulate::Degradation d;
  std::size_t next = 0;
  if (link) {
    if (parts.size() != 3) throw ConfigError(fmt::format("{} {}: expected {}", flag, text, form));
    const std::string& kind = parts[next++];
    if (kind == "nic") {
      d.kind = Kind::Nic;
    } else if (kind == "nvlink") {
      d.kind = Kind::Nvlink;
    } else if (kind == "pod") {
      d.kind = Kind::Pod;
    } else {
      throw ConfigError(fmt::format("{} {}: unknown link kind '{}'; expected {}", flag, text, kind, form));
    }
  } else if (parts.size() != 2) {
    throw ConfigError(fmt::format("{} {}: expected {}", flag, text, form));
  }
  const auto index = whole_number(parts[next]);
  const auto factor = decimal_number(parts[next + 1]);
  if (!index || !factor) throw ConfigError(fmt::format("{} {}: not numbers; expected {}", flag, text, form));
  d.index = *index;
  d.factor = *factor;
  return d;
}

std::vector<Rank> parse_ranks(const std::string& text, std::int64_t world) {
  std::vector<Rank> ranks;
  if (text == "all") {
    for (Rank r = 0; r < world; ++r) ranks.push_back(r);
    return ranks;
  }
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto r = whole_number(item);
    if (!r || *r < 0 || *r >= world)
      throw ConfigError(fmt::format("--trace-ranks: '{}' is not a rank in [0, {}); give ranks "
                                    "separated by commas, or 'all'",
                                    item, world));
    ranks.push_back(static_cast<Rank>(*r));
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

}  // namespace

int run_simulate(const std::vector<std::string>& args, std::ostream& out) {
  Flags f;
  const po::options_description options = describe(f);
  po::variables_map vm;
  parse_args(split_megatron_args(args, f.inputs), options, nullptr, vm, "simulate");
  if (vm.count("help")) {
    fmt::print(out, "{}", kUsage);
    std::ostringstream text;
    text << options;
    fmt::print(out, "{}", text.str());
    return 0;
  }
  if (f.mode != "explicit" && f.mode != "symmetric" && f.mode != "auto")
    throw ConfigError(fmt::format("--mode = {} is not a mode; use auto, explicit or symmetric", f.mode));
  config::InputFiles read;
  record_files(f.inputs, read);
  // Before any work: a bad output path fails now, not after the simulation.
  check_output_paths({{"--json", f.json}, {"--trace", f.trace}}, read);
  const LoadedRun run = load_run(f.inputs, read, vm, "ptsim simulate");
  simulate::Request request;
  request.model = run.model;
  request.hardware = run.hardware;
  request.parallel = run.parallel;
  request.mode = f.mode == "explicit"    ? simulate::Mode::Explicit
                 : f.mode == "symmetric" ? simulate::Mode::Symmetric
                                         : simulate::Mode::Auto;
  for (const auto& g : f.slow_gpus) request.degradations.push_back(parse_degradation(g, false));
  for (const auto& l : f.slow_links) request.degradations.push_back(parse_degradation(l, true));
  if (!f.trace.empty())
    request.record_ranks = f.trace_ranks.empty()
                               ? simulate::default_trace_ranks(request.parallel)
                               : parse_ranks(f.trace_ranks, request.parallel.world_size);

  simulate::Outcome outcome = simulate::simulate_step(request);
  if (!f.timing) outcome.result.simulation.wall_s.reset();
  if (!f.trace_ranks.empty()) {
    // Asked-for ranks a symmetric run does not simulate have nothing to
    // trace: say so rather than leave them out silently.
    std::vector<Rank> simulated, missing;
    for (const engine::RankStats& s : outcome.run.ranks) simulated.push_back(s.rank);
    for (const Rank r : request.record_ranks)
      if (!std::binary_search(simulated.begin(), simulated.end(), r)) missing.push_back(r);
    if (!missing.empty())
      fmt::print(stderr,
                 "ptsim simulate: --trace-ranks: rank(s) {} not in the trace: {} mode simulates ranks {} and "
                 "no other (--mode explicit simulates and traces every rank)\n",
                 fmt::join(missing, ", "), outcome.result.simulation.mode, fmt::join(simulated, ", "));
  }
  report::print_console(outcome.result, out);
  std::vector<OutputFile> outputs;
  if (!f.json.empty())
    outputs.push_back({f.json, [&](std::ostream& o) { report::write_json(outcome.result, o); }});
  if (!f.trace.empty())
    outputs.push_back({f.trace, [&](std::ostream& o) {
                         report::write_chrome_trace(outcome.run, outcome.step.workload, o);
                       }});
  write_output_files(outputs, read);
  const auto& memory = outcome.result.memory;
  if (!memory.fits && !f.allow_oom) {
    fmt::print(stderr,
               "ptsim simulate: the strategy does not fit in memory ({:.1f} GiB of {:.1f} GiB per GPU, {:.1f} GiB "
               "of it headroom); exit 3 (--allow-oom to exit 0)\n",
               static_cast<double>(memory.peak_bytes) / (1ull << 30),
               static_cast<double>(memory.capacity_bytes) / (1ull << 30),
               static_cast<double>(memory.headroom_bytes) / (1ull << 30));
    return 3;
  }
  return 0;
}

}  // namespace ptsim::cli

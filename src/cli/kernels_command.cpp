// `ptsim kernels`: the distinct kernels a simulated step runs, how often and
// how long — what the micro-benchmarks should measure.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "parse_args.hpp"
#include "output_file.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/cost/compute_cost.hpp"
#include "ptsim/simulate/kernel_inventory.hpp"
#include "run_inputs.hpp"

namespace ptsim::cli {

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    R"(Usage: ptsim kernels --model FILE --hw FILE [strategy] [--by-module] [--json FILE] [--microbench-list FILE]

Lists the distinct compute kernels one training step runs — class, dtype,
shape — with how many times one rank of each pipeline stage runs each per step
and the time ptsim predicts for one call: "burst", at the rates a short
micro-benchmark times, and "sustained", at what the GPU keeps through seconds
of continuous load (the profile's gpu.sustained fractions), which is what a
simulated step uses; "total" is calls × sustained. --microbench-list writes
them in the plain format ptsim-microbench reads (--shapes FILE) to measure
exactly these. --by-module adds the same time summed by module — an op's
first two name parts after its pass (moe.experts, moe.permute, attn.flash,
mamba.ssd, ln1, …) — split into forward, backward, recomputed forward and
the rest (optimizer, FSDP copies): where a layer's compute goes. A model
with Mamba-2 layers also gets the rates its SSD kernels (class ssd_scan) are
priced at: their FLOPs at the SMs' rate, forward or backward, or their bytes
at HBM's, whichever is slower for the call.

Examples:
  ptsim kernels --model configs/models/llama3-8b.json --hw hw_profiles/h200-sxm-141gb.json \
      --gpus 8 --tp 8 --global-batch-size 8 --microbench-list kernels.txt
  ptsim kernels --model configs/models/qwen3-30b-a3b.json --hw hw_profiles/h100-sxm5-80gb.json \
      --gpus 8 --ep 8 --global-batch-size 8 --by-module

)";

std::string shape_text(const simulate::KernelUse& k) {
  using taskgraph::KernelClass;
  if (k.kernel == KernelClass::Gemm)
    return k.shape[3] > 1 ? fmt::format("{}×{}×{} ×{}", k.shape[0], k.shape[1], k.shape[2], k.shape[3])
                          : fmt::format("{}×{}×{}", k.shape[0], k.shape[1], k.shape[2]);
  if (taskgraph::attention_shaped(k.kernel))
    // Keys as many as queries unless a context-parallel step's block says
    // otherwise (a window's length is shown as the window).
    return fmt::format("bh {} · s {}{} · d {}{}{}{}", k.shape[0], k.shape[1],
                       k.shape[2] != k.shape[1] && !(k.flags & taskgraph::kSlidingWindow)
                           ? fmt::format("×{}", k.shape[2])
                           : std::string(),
                       k.shape[3],
                       k.value_head_dim != k.shape[3] ? fmt::format("/{}", k.value_head_dim) : std::string(),
                       k.flags & taskgraph::kCausal          ? " causal"
                       : k.flags & taskgraph::kSlidingWindow ? fmt::format(" window {}", k.shape[2])
                                                             : std::string(),
                       k.flags & taskgraph::kBackwardPass ? " bwd" : " fwd");
  return fmt::format("{:.1f} MB", static_cast<double>(k.bytes) / 1e6);
}

nlohmann::ordered_json shape_json(const simulate::KernelUse& k) {
  using taskgraph::KernelClass;
  if (k.kernel == KernelClass::Gemm)
    return {{"m", k.shape[0]}, {"n", k.shape[1]}, {"k", k.shape[2]}, {"batch", std::max<std::uint32_t>(1, k.shape[3])}};
  if (taskgraph::attention_shaped(k.kernel))
    return {{"batch_heads", k.shape[0]},
            {"seq_q", k.shape[1]},
            {"seq_kv", k.shape[2]},
            {"head_dim", k.shape[3]},
            {"value_head_dim", k.value_head_dim},
            {"causal", (k.flags & taskgraph::kCausal) != 0},
            {"sliding_window", (k.flags & taskgraph::kSlidingWindow) != 0},
            {"backward", (k.flags & taskgraph::kBackwardPass) != 0}};
  return {{"bytes", k.bytes}};
}

}  // namespace

int run_kernels(const std::vector<std::string>& args, std::ostream& out) {
  RunInputs inputs;
  std::string json_path, list_path;
  bool by_module = false;
  po::options_description outputs("Outputs");
  outputs.add_options()("by-module", po::bool_switch(&by_module),
                        "also print the time by module, forward, backward and recomputed")(
      "json", po::value(&json_path)->value_name("FILE"), "write the kernels (and the modules) as JSON")(
      "microbench-list", po::value(&list_path)->value_name("FILE"),
      "write the kernels for ptsim-microbench --shapes")("help,h", "show this help");
  po::options_description options;
  options.add(input_options(inputs)).add(strategy_options()).add(outputs);
  po::variables_map vm;
  parse_args(split_megatron_args(args, inputs), options, nullptr, vm, "kernels");
  if (vm.count("help")) {
    std::ostringstream text;
    text << options;
    fmt::print(out, "{}{}", kUsage, text.str());
    return 0;
  }
  config::InputFiles read;
  record_files(inputs, read);
  check_output_paths({{"--json", json_path}, {"--microbench-list", list_path}}, read);
  const LoadedRun run = load_run(inputs, read, vm, "ptsim kernels");
  const auto kernels = simulate::kernel_inventory(run.model, run.hardware, run.parallel);

  fmt::print(out, "{} kernels of one step of {} on {} (calls per step on one rank of each stage)\n",
             kernels.size(), run.model.name, run.hardware.gpu.name);
  const auto& sustained = run.hardware.gpu.sustained;
  if (sustained)
    fmt::print(out, "sustained rates: tensor cores {:.0f}% of burst (bf16), memory {:.0f}%\n",
               100 * sustained->tensor_for(Dtype::Bf16), 100 * sustained->memory);
  else
    fmt::print(out, "the profile has no gpu.sustained rates: a step runs at burst rates\n");
  if (std::any_of(kernels.begin(), kernels.end(),
                  [](const auto& k) { return k.kernel == taskgraph::KernelClass::StateSpaceScan; })) {
    // Where the SSD kernels' time comes from (cost/compute_cost.hpp).
    const double forward = 1 / cost::ssd_scan_issue_seconds(run.hardware, 1, false);
    const double backward = 1 / cost::ssd_scan_issue_seconds(run.hardware, 1, true);
    const double hbm =
        cost::memory_bytes_per_s(run.hardware, taskgraph::KernelClass::StateSpaceScan, 1e9, cost::Load::Sustained);
    fmt::print(out,
               "ssd_scan: FLOPs at the SMs' issue rate, {:.1f} TFLOP/s forward and {:.1f} backward (measured on an "
               "H100, scaled by SMs × clock), or bytes at HBM's, {:.2f} TB/s, whichever is slower\n",
               forward / 1e12, backward / 1e12, hbm / 1e12);
  }
  fmt::print(out, "{:<12} {:<6} {:<28} {:>8} {:>12} {:>12} {:>12}  {}\n", "class", "dtype", "shape", "calls",
             "burst/call", "sustained", "total", "ops");
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& k : kernels) {
    const std::string names = fmt::format("{}", fmt::join(k.names, ", "));
    fmt::print(out, "{:<12} {:<6} {:<28} {:>8} {:>9.1f} µs {:>9.1f} µs {:>10.2f} ms  {}\n",
               taskgraph::to_string(k.kernel), to_string(k.dtype), shape_text(k), k.count, k.burst_seconds * 1e6,
               k.seconds * 1e6, k.seconds * static_cast<double>(k.count) * 1e3, names);
    list.push_back({{"class", taskgraph::to_string(k.kernel)},
                    {"dtype", to_string(k.dtype)},
                    {"shape", shape_json(k)},
                    {"names", k.names},
                    {"calls_by_name", k.name_counts},
                    {"count", k.count},
                    {"flops", k.flops},
                    {"bytes", k.bytes},
                    {"time_s", k.seconds},
                    {"burst_time_s", k.burst_seconds},
                    {"total_s", k.seconds * static_cast<double>(k.count)}});
  }
  const auto modules = simulate::module_times(kernels);
  double total = 0;
  for (const auto& m : modules) total += m.total_s();
  nlohmann::ordered_json module_list = nlohmann::ordered_json::array();
  if (by_module)
    fmt::print(out,
               "\ntime by module (one rank of each stage, per step; {:.3f} s in all)\n{:<28} {:>8} {:>11} {:>11} "
               "{:>11} {:>11} {:>11} {:>6}\n",
               total, "module", "calls", "forward", "backward", "recompute", "other", "total", "share");
  for (const auto& m : modules) {
    if (by_module)
      fmt::print(out, "{:<28} {:>8} {:>8.2f} ms {:>8.2f} ms {:>8.2f} ms {:>8.2f} ms {:>8.2f} ms {:>5.1f}%\n", m.module,
                 m.calls, m.forward_s * 1e3, m.backward_s * 1e3, m.recompute_s * 1e3, m.other_s * 1e3,
                 m.total_s() * 1e3, total > 0 ? 100 * m.total_s() / total : 0.0);
    module_list.push_back({{"module", m.module},
                           {"calls", m.calls},
                           {"forward_s", m.forward_s},
                           {"backward_s", m.backward_s},
                           {"recompute_s", m.recompute_s},
                           {"other_s", m.other_s},
                           {"total_s", m.total_s()}});
  }
  std::vector<OutputFile> files;
  if (!json_path.empty())
    files.push_back({json_path, [&](std::ostream& o) {
                         nlohmann::ordered_json j;
                         j["schema_version"] = 1;
                         j["model"] = run.model.name;
                         j["hardware"] = run.hardware.name;
                         j["kernels"] = list;
                         j["modules"] = module_list;
                         o << j.dump(2) << '\n';
                       }});
  if (!list_path.empty())
    files.push_back({list_path, [&](std::ostream& o) { o << simulate::microbench_list(kernels); }});
  write_output_files(files, read);
  return 0;
}

}  // namespace ptsim::cli

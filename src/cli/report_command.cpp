// `ptsim report`: capacity planning over GPU counts and hardware (the
// arithmetic is plan/capacity.hpp's; this composes and renders it).
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "commands.hpp"
#include "plan_point.hpp"
#include "parse_args.hpp"
#include "search_progress.hpp"
#include "shipped_files.hpp"
#include "output_file.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/common/parse_number.hpp"
#include "ptsim/config/load_error_bands.hpp"
#include "ptsim/config/load_hardware.hpp"
#include "ptsim/config/load_model.hpp"
#include "ptsim/plan/capacity.hpp"
#include "ptsim/plan/planner.hpp"
#include "ptsim/report/json_report.hpp"
#include "ptsim/simulate/simulate_step.hpp"
#include "run_inputs.hpp"
#include "run_program.hpp"

namespace ptsim::cli {

namespace po = boost::program_options;

namespace {

// A figure that is there only when its input was given, else null.
template <typename T>
nlohmann::ordered_json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

constexpr const char* kReportUsage =
    R"(Usage: ptsim report --model FILE --hw FILE[,FILE...] --tokens T --out DIR [options]

Capacity planning: for each hardware profile and GPU count, the best strategy
(ptsim plan), its step time, the time to train T tokens, GPU-hours, cost and
energy. Writes DIR/report.json and renders DIR/report.md and a self-contained
DIR/report.html with plots (scaling curve, step breakdown per scale, memory
per pipeline stage, a timeline excerpt of the fastest point's step) through
render_report.py (installed beside the ptsim binary; Debian's python3 with
matplotlib).
Every page states, for each GPU it shows, how far ptsim's step times were
from published runs on that GPU (docs/accuracy.md, --error-bands), or that
none validates it.

Defaults: GPU counts 64, 128, …, 8192; global batch the largest power of two
of sequences within 4M tokens (Llama 3's main-stage batch); sequence length
the model's.

--power-limit-w W plans every profile under a board power limit of W watts,
as ptsim plan --power-limit-w does (the tensor cores' sustained rates from a
measured training-throughput curve, docs/hardware-sources.md); the energy
column then takes W a GPU unless --gpu-power-watts says less. The validated
error bands stay those measured at each GPU's own limit: under a lower one a
prediction errs fast (a step slows less than its tensor cores).

Example:
  ptsim report --model configs/models/llama3-70b.json \
      --hw hw_profiles/dgx-h100-superpod.json,hw_profiles/gb200-nvl72.json \
      --tokens 15e12 --gpus 1024,2048,4096,8192 --days 60 --price-per-gpu-hour 2.5 \
      --gpu-power-watts 700 --out report/
  ptsim report --model configs/models/llama3-70b.json --hw hw_profiles/dgx-h100-superpod.json \
      --tokens 15e12 --gpus 2048,4096 --power-limit-w 500 --out report-500w/

)";

// A step's first `window` seconds on the representative ranks, as events.
nlohmann::ordered_json timeline_json(const model::ModelSpec& model, const hardware::HardwareProfile& hw,
                                     const plan::PlannedStrategy& best) {
  simulate::Request request{model, hw, best.parallel, simulate::Mode::Auto, {}, {}};
  if (best.strategy.seq_length) request.model.seq_length = *best.strategy.seq_length;
  request.record_ranks = simulate::default_trace_ranks(best.parallel);
  const simulate::Outcome out = simulate::simulate_step(request);
  const double step = out.result.step_time_s;
  // About four micro-batches' worth of the step, from its middle: the steady
  // state (1F1B's alternating forwards and backwards on every stage), not
  // the warm-up a window from time 0 would show.
  const double width =
      std::min(step, 4.0 * step / static_cast<double>(std::max<std::int64_t>(1, out.step.num_microbatches)) +
                         0.02 * step);
  const double begin = std::max(0.0, step / 2 - width / 2);
  double window = begin + width;  // the end
  // Keep the excerpt drawable: shrink the window so no rank shows more than
  // kMaxEvents events, rather than cutting one rank's events off mid-window.
  constexpr std::size_t kMaxEvents = 3000;
  std::map<Rank, std::vector<double>> starts;
  for (const auto& rec : out.run.timeline)
    if (rec.start.seconds() >= begin && rec.start.seconds() <= window) starts[rec.rank].push_back(rec.start.seconds());
  for (auto& [rank, list] : starts)
    if (list.size() > kMaxEvents) {
      std::nth_element(list.begin(), list.begin() + kMaxEvents, list.end());
      window = std::min(window, list[kMaxEvents]);
    }
  const auto& w = out.step.workload;
  std::map<Rank, nlohmann::ordered_json> events;
  for (const auto& rec : out.run.timeline) {
    if (rec.start.seconds() < begin || rec.start.seconds() >= window) continue;
    const auto& program = w.programs[w.program_of_rank[static_cast<std::size_t>(rec.rank)]];
    const auto task = program.task(rec.task);
    events[rec.rank].push_back({{"stream", w.stream_names[task.stream]},
                                {"category", w.category_names[task.category]},
                                {"start_s", rec.start.seconds()},
                                {"end_s", rec.end.seconds()}});
  }
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (auto& [rank, list] : events)
    ranks.push_back({{"rank", rank},
                     {"stage", out.step.layout.coordinate(rank, strategy::Axis::Pp)},
                     {"events", std::move(list)}});
  return {{"hardware", hw.name}, {"gpus", best.parallel.world_size}, {"label", best.label},
          {"window_s", {begin, window}}, {"ranks", ranks}};
}

// The validated error band of each GPU the report shows, in the order the
// profiles name them: what docs/accuracy.md measured on published runs, or
// that no published run validates the GPU.
nlohmann::ordered_json validated_error_json(const std::vector<hardware::HardwareProfile>& profiles,
                                            const std::map<std::string, config::ErrorBand>& bands,
                                            const std::string& bands_path) {
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
  std::vector<std::string> seen;
  for (const auto& hw : profiles) {
    if (std::find(seen.begin(), seen.end(), hw.gpu.name) != seen.end()) continue;
    seen.push_back(hw.gpu.name);
    const auto it = bands.find(hw.gpu.name);
    if (it == bands.end()) {
      gpus.push_back({{"gpu", hw.gpu.name}, {"runs", 0}});
      continue;
    }
    const config::ErrorBand& b = it->second;
    gpus.push_back({{"gpu", hw.gpu.name},
                    {"runs", b.runs},
                    {"median_abs_error_pct", b.median_abs_error_pct},
                    {"min_error_pct", b.min_error_pct},
                    {"max_error_pct", b.max_error_pct},
                    {"runs_predicted_short", b.runs_predicted_short},
                    {"profiles", b.profiles}});
  }
  return {{"source", "docs/accuracy.md, Error band per GPU"}, {"bands_file", bands_path}, {"gpus", gpus}};
}

// One console line per GPU of validated_error_json.
void print_validated_error(std::ostream& out, const nlohmann::ordered_json& validated) {
  fmt::print(out, "validated error of ptsim's step times on published runs ({}):\n",
             validated["source"].get<std::string>());
  for (const auto& g : validated["gpus"]) {
    const std::string gpu = g["gpu"].get<std::string>();
    if (g["runs"].get<std::int64_t>() == 0) {
      fmt::print(out, "  {:<22} no published run on this GPU validates ptsim: its error is unknown\n", gpu);
      continue;
    }
    fmt::print(out, "  {:<22} median |error| {:.1f}% over {} runs, {:+.1f}% … {:+.1f}%, too short on {}\n", gpu,
               g["median_abs_error_pct"].get<double>(), g["runs"].get<std::int64_t>(),
               g["min_error_pct"].get<double>(), g["max_error_pct"].get<double>(),
               g["runs_predicted_short"].get<std::int64_t>());
  }
}

// The renderer given, else the one installed beside the executable (the
// build copies scripts/render_report.py next to build/ptsim).
std::filesystem::path renderer_path(const std::string& given) {
  if (!given.empty()) return given;
  return std::filesystem::path(executable_directory()) / "render_report.py";
}

}  // namespace

int run_report(const std::vector<std::string>& args, std::ostream& out) {
  std::string model_path, hw_list, gpus_list = "64,128,256,512,1024,2048,4096,8192", out_dir, renderer,
      bands_path = shipped_file("validation/error_bands.json");
  double tokens = 0, days = 0, price = 0, watts = 0, power_limit = 0;
  std::int64_t batch = 0, seq = 0;
  unsigned threads = 0;
  po::options_description options("Options");
  // Boost.Program_options' chained calls, one option a line:
  // clang-format off
  options.add_options()
      ("model", po::value(&model_path)->value_name("FILE"), "model (ptsim JSON or Hugging Face config.json)")
      ("hw", po::value(&hw_list)->value_name("FILE[,FILE...]"), "hardware profiles to compare")
      ("tokens", po::value(&tokens)->value_name("T"), "tokens to train, e.g. 15e12")
      ("gpus", po::value(&gpus_list)->value_name("LIST"), "GPU counts, comma-separated (default 64,128,…,8192)")
      ("days", po::value(&days)->value_name("D"), "deadline: mark the points that train within D days")
      ("price-per-gpu-hour", po::value(&price)->value_name("USD"), "for the cost column")
      ("gpu-power-watts", po::value(&watts)->value_name("W"), "for the energy column (GPUs only)")
      ("power-limit-w", po::value(&power_limit)->value_name("W"),
       "what-if: every GPU under a board power limit of W watts (see above)")
      ("global-batch-size", po::value(&batch)->value_name("B"), "sequences per step (default: ~4M tokens)")
      ("seq-length", po::value(&seq)->value_name("S"), "sequence length (default: the model's)")
      ("out", po::value(&out_dir)->value_name("DIR"), "where report.json, report.md and report.html go")
      ("renderer", po::value(&renderer)->value_name("SCRIPT"),
       "the plotting script, an executable (default: render_report.py beside this ptsim)")
      ("error-bands", po::value(&bands_path)->value_name("FILE"),
       "validated error per GPU stated on every page (default: the shipped validation/error_bands.json)")
      ("no-render", "write report.json only")
      ("threads", po::value(&threads)->value_name("N"), "simulation threads (default: every core)")
      ("quiet,q", "no progress on standard error")
      ("help,h", "show this help");
  // clang-format on
  po::variables_map vm;
  parse_args(args, options, nullptr, vm, "report");
  if (vm.count("help")) {
    std::ostringstream text;
    text << options;
    fmt::print(out, "{}{}", kReportUsage, text.str());
    return 0;
  }
  if (model_path.empty() || hw_list.empty() || out_dir.empty())
    throw ConfigError("ptsim report: --model, --hw and --out are required; see --help");
  // Before the searches: a directory that cannot be made fails now.
  check_output_directory("--out", out_dir);
  if (!(tokens > 0) || tokens > 1e18) throw ConfigError(fmt::format("--tokens = {} must be a positive count of tokens", tokens));
  if (vm.count("days") && !(days > 0)) throw ConfigError(fmt::format("--days = {} must be positive", days));
  if (vm.count("price-per-gpu-hour") && !(price > 0)) throw ConfigError(fmt::format("--price-per-gpu-hour = {} must be positive", price));
  if (vm.count("gpu-power-watts") && !(watts > 0)) throw ConfigError(fmt::format("--gpu-power-watts = {} must be positive", watts));
  const bool limited = vm.count("power-limit-w") > 0;
  if (limited && !(power_limit > 0))
    throw ConfigError(fmt::format("--power-limit-w = {} must be positive", power_limit));
  // A GPU held to W watts draws no more than W.
  if (limited && vm.count("gpu-power-watts") && watts > power_limit)
    throw ConfigError(
        fmt::format("--gpu-power-watts = {} exceeds --power-limit-w = {}: a GPU under that limit "
                    "draws at most {} W",
                    watts, power_limit, power_limit));
  std::vector<std::int64_t> gpu_counts;
  for (const auto& g : split_list(gpus_list, ',')) {
    const auto v = whole_number(g);
    if (!v || *v < 1 || *v > (1 << 24))
      throw ConfigError(fmt::format("--gpus: '{}' is not a GPU count in [1, 16777216]; give counts separated by commas", g));
    gpu_counts.push_back(*v);
  }
  config::InputFiles read;
  const model::ModelSpec model = config::load_model(model_path, read);
  note_sequence_length(model_path, model, seq > 0);
  note_unmeasured_kernels(model_path, model);
  std::vector<hardware::HardwareProfile> profiles;
  for (const auto& path : split_list(hw_list, ',')) profiles.push_back(config::load_hardware(path, read));
  // The bands were measured on each GPU at its own limit: named as loaded.
  const nlohmann::ordered_json validated =
      validated_error_json(profiles, config::load_error_bands(bands_path, read), bands_path);
  if (limited)
    for (auto& hw : profiles) hw = at_power_limit_flag(std::move(hw), power_limit);
  const std::int64_t seq_length = seq > 0 ? seq : model.seq_length;
  if (batch <= 0) batch = plan::default_global_batch(seq_length);
  const bool quiet = vm.count("quiet") > 0;

  std::vector<Point> points;
  std::vector<std::pair<std::int64_t, std::int64_t>> order;
  for (const auto& hw : profiles)
    for (const std::int64_t g : gpu_counts) order.emplace_back(g, hw.nvlink.domain_gpus);
  SharedSpaces spaces(order);
  std::size_t n = 0;
  for (const auto& hw : profiles)
    for (const std::int64_t g : gpu_counts) {
      if (!quiet) fmt::print(stderr, "[{}/{}] {} × {}: searching strategies\n", ++n, profiles.size() * gpu_counts.size(), g, hw.name);
      points.push_back(
          plan_point(model, hw, g, batch, seq > 0 ? std::optional(seq) : std::nullopt, {}, threads, quiet, spaces));
    }

  plan::TrainingRun run;
  run.tokens = tokens;
  run.tokens_per_step = static_cast<double>(batch * seq_length);
  if (vm.count("price-per-gpu-hour")) run.price_per_gpu_hour_usd = price;
  if (vm.count("gpu-power-watts")) {
    run.gpu_power_watts = watts;
  } else if (limited) {
    run.gpu_power_watts = power_limit;
  }
  if (vm.count("days")) run.deadline_days = days;
  const double steps = plan::training_steps(run);
  nlohmann::ordered_json j;
  j["schema"] = "ptsim-capacity-report/1";
  j["model"] = model.name;
  j["tokens"] = tokens;
  j["global_batch_size"] = batch;
  j["seq_length"] = seq_length;
  j["days"] = vm.count("days") ? nlohmann::ordered_json(days) : nlohmann::ordered_json(nullptr);
  j["price_per_gpu_hour"] = vm.count("price-per-gpu-hour") ? nlohmann::ordered_json(price) : nlohmann::ordered_json(nullptr);
  j["gpu_power_watts"] = optional_json(run.gpu_power_watts);
  j["power_limit_W"] = limited ? nlohmann::ordered_json(power_limit) : nlohmann::ordered_json(nullptr);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  const Point* fastest = nullptr;
  const hardware::HardwareProfile* fastest_hw = nullptr;
  fmt::print(out, "{} · {:.3g} tokens · global batch {} × {} tokens · {:.0f} steps\n", model.name, tokens, batch,
             seq_length, steps);
  fmt::print(out, "{:<22} {:>6} {:>9} {:>6} {:>9} {:>12} {:>12} {:>10}  {}\n", "hardware", "GPUs", "step", "MFU", "days",
             "GPU-hours", "cost", "MWh", "strategy");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    const auto& hw = profiles[i / gpu_counts.size()];
    if (!p.best) {
      list.push_back({{"hardware", p.hardware_name}, {"gpu", p.gpu}, {"gpus", p.gpus}, {"fits", false}, {"reason", p.reason}});
      fmt::print(out, "{:<22} {:>6} {:>9}  {}\n", p.hardware_name, p.gpus, "-", p.reason);
      continue;
    }
    const auto& r = p.best->result;
    const plan::TrainingCost cost = plan::training_cost(run, r.step_time_s, p.gpus);
    nlohmann::ordered_json stages = nlohmann::ordered_json::array();
    for (const auto& s : r.stages)
      stages.push_back({{"stage", s.stage},
                        {"peak_bytes", s.peak_bytes},
                        {"static_bytes", s.static_bytes},
                        {"activations_peak_bytes", s.activations_peak_bytes}});
    nlohmann::ordered_json row = {{"hardware", p.hardware_name}, {"gpu", p.gpu}, {"gpus", p.gpus}, {"fits", true}};
    append_best_step(row, *p.best);
    row["steps"] = static_cast<std::int64_t>(cost.steps);
    row["time_to_train_s"] = cost.time_s;
    row["time_to_train_days"] = cost.days;
    row["gpu_hours"] = cost.gpu_hours;
    row["cost_usd"] = optional_json(cost.cost_usd);
    row["energy_mwh"] = optional_json(cost.energy_mwh);
    row["meets_deadline"] = optional_json(cost.meets_deadline);
    row["breakdown_s"] = report::breakdown_json(r.breakdown);
    row["capacity_bytes"] = r.memory.capacity_bytes;
    row["stages"] = stages;
    append_search_counts(row, p);
    list.push_back(row);
    fmt::print(out, "{:<22} {:>6} {:>8.3f}s {:>5.1f}% {:>9.1f} {:>12.0f} {:>12} {:>10}  {}\n", p.hardware_name, p.gpus,
               r.step_time_s, 100 * r.throughput.mfu, cost.days, cost.gpu_hours,
               cost.cost_usd ? fmt::format("${:.0f}", *cost.cost_usd) : "-",
               cost.energy_mwh ? fmt::format("{:.1f}", *cost.energy_mwh) : "-", p.best->label);
    if (fastest == nullptr || r.step_time_s * steps < fastest->best->result.step_time_s * steps) {
      fastest = &p;
      fastest_hw = &hw;
    }
  }
  j["points"] = list;
  j["validated_error"] = validated;
  print_validated_error(out, validated);
  if (limited)
    fmt::print(out,
               "  (measured at each GPU's own board limit; under --power-limit-w {} W a prediction errs fast: a step "
               "slows less than its tensor cores)\n",
               power_limit);
  j["timeline"] = fastest != nullptr ? timeline_json(model, *fastest_hw, *fastest->best) : nlohmann::ordered_json(nullptr);

  make_output_directory("--out", out_dir);
  const std::string json_path = (std::filesystem::path(out_dir) / "report.json").string();
  write_output_file(json_path, read, [&](std::ostream& o) { o << j.dump(1) << '\n'; });
  fmt::print(out, "wrote {}\n", json_path);
  if (vm.count("no-render")) return fastest == nullptr ? 3 : 0;
  const std::filesystem::path script = renderer_path(renderer);
  if (!std::filesystem::exists(script))
    throw ConfigError(fmt::format("the report renderer {} does not exist; give --renderer SCRIPT or --no-render",
                                  script.string()));
  // The script names its interpreter (Debian's python3, with Debian's matplotlib).
  const int status = run_program({script.string(), json_path, out_dir});
  if (status != 0)
    throw ConfigError(fmt::format("rendering the report failed: {} {} {} exited {}; report.json is written",
                                  script.string(), json_path, out_dir, status));
  fmt::print(out, "wrote {}/report.md and {}/report.html\n", out_dir, out_dir);
  return fastest == nullptr ? 3 : 0;
}

}  // namespace ptsim::cli

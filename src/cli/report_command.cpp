// `ptsim report` (capacity planning over GPU counts and hardware) and
// `ptsim sweep` (the best strategy over a grid of hardware what-ifs).
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "commands.hpp"
#include "parse_args.hpp"
#include "search_progress.hpp"
#include "shipped_files.hpp"
#include "output_file.hpp"
#include "plan_output.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/common/parse_number.hpp"
#include "ptsim/config/json_file.hpp"
#include "ptsim/config/load_error_bands.hpp"
#include "ptsim/config/load_hardware.hpp"
#include "ptsim/config/load_model.hpp"
#include "ptsim/plan/planner.hpp"
#include "ptsim/report/json_report.hpp"
#include "ptsim/simulate/simulate_step.hpp"
#include "run_inputs.hpp"

namespace ptsim::cli {

namespace po = boost::program_options;

namespace {

constexpr const char* kReportUsage = R"(Usage: ptsim report --model FILE --hw FILE[,FILE...] --tokens T --out DIR [options]

Capacity planning: for each hardware profile and GPU count, the best strategy
(ptsim plan), its step time, the time to train T tokens, GPU-hours, cost and
energy. Writes DIR/report.json and renders DIR/report.md and a self-contained
DIR/report.html with plots (scaling curve, step breakdown per scale, memory
per pipeline stage, a timeline excerpt of the fastest point's step) through
scripts/render_report.py run by Debian's /usr/bin/python3 with matplotlib.
Every page states, for each GPU it shows, how far ptsim's step times were
from published runs on that GPU (docs/accuracy.md, --error-bands), or that
none validates it.

Defaults: GPU counts 64, 128, …, 8192; global batch the largest power of two
of sequences within 4M tokens (Llama 3's main-stage batch); sequence length
the model's.

Example:
  ptsim report --model configs/models/llama3-70b.json \
      --hw hw_profiles/dgx-h100-superpod.json,hw_profiles/gb200-nvl72.json \
      --tokens 15e12 --gpus 1024,2048,4096,8192 --days 60 --price-per-gpu-hour 2.5 \
      --gpu-power-watts 700 --out report/

)";

constexpr const char* kSweepUsage = R"(Usage: ptsim sweep SPEC.json [--json FILE] [--csv FILE]

The best strategy (ptsim plan) at every point of a grid of hardware what-ifs:
each hardware entry is a profile, optionally with overrides by JSON pointer
(NVLink domain size, NIC bandwidth, HBM capacity, …), crossed with GPU counts.

SPEC.json:
  { "model": "configs/models/llama3-70b.json", "global_batch_size": 512, "seq_length": 8192,
    "gpus": [256, 512],
    "hardware": [ {"name": "H100 SuperPOD", "profile": "hw_profiles/dgx-h100-superpod.json"},
                  {"name": "H100, 2x NIC", "profile": "hw_profiles/dgx-h100-superpod.json",
                   "overrides": {"/network/nic/bandwidth_GBps": 100}} ] }
Relative paths are relative to SPEC.json's directory, then to the working directory.

Example:
  ptsim sweep configs/sweeps/llama3-70b-network.json --json sweep.json

)";

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::int64_t default_batch(std::int64_t seq) {
  std::int64_t b = 1;
  while (2 * b * seq <= 4'194'304) b *= 2;
  return b;
}

// The best strategy for one (hardware, GPU count), or why there is none.
struct Point {
  std::string hardware_name, gpu;
  std::int64_t gpus = 0;
  std::optional<plan::PlannedStrategy> best;
  std::string reason;
  std::size_t searched = 0, simulated = 0;
};

Point plan_point(const model::ModelSpec& model, const hardware::HardwareProfile& hw, std::int64_t gpus,
                 std::int64_t batch, std::optional<std::int64_t> seq, const config::StrategyInput& fixed,
                 unsigned threads, bool quiet) {
  Point p;
  p.hardware_name = hw.name;
  p.gpu = hw.gpu.name;
  p.gpus = gpus;
  plan::PlanRequest r;
  r.model = model;
  r.hardware = hw;
  r.gpus = gpus;
  r.global_batch_size = batch;
  r.seq_length = seq;
  r.fixed = fixed;
  r.top = 1;
  r.threads = threads;
  SearchProgressReporter progress(fmt::format("{} × {}", gpus, hw.name), !quiet);
  const plan::PlanResult result = plan::plan(r, progress.callback());
  p.searched = result.searched;
  p.simulated = result.simulated;
  if (result.best.empty()) {
    p.reason = result.searched == 0 ? "no valid strategy for this GPU count and batch"
                                    : "no strategy fits in memory";
  } else {
    p.best = result.best.front();
  }
  return p;
}

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

std::filesystem::path renderer_path(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("PTSIM_RENDERER")) return env;
  return shipped_file("scripts/render_report.py");
}

}  // namespace

int run_report(const std::vector<std::string>& args, std::ostream& out) {
  std::string model_path, hw_list, gpus_list = "64,128,256,512,1024,2048,4096,8192", out_dir, renderer,
      bands_path = shipped_file("validation/error_bands.json");
  double tokens = 0, days = 0, price = 0, watts = 0;
  std::int64_t batch = 0, seq = 0;
  unsigned threads = 0;
  po::options_description options("Options");
  options.add_options()
      ("model", po::value(&model_path)->value_name("FILE"), "model (ptsim JSON or Hugging Face config.json)")
      ("hw", po::value(&hw_list)->value_name("FILE[,FILE...]"), "hardware profiles to compare")
      ("tokens", po::value(&tokens)->value_name("T"), "tokens to train, e.g. 15e12")
      ("gpus", po::value(&gpus_list)->value_name("LIST"), "GPU counts, comma-separated (default 64,128,…,8192)")
      ("days", po::value(&days)->value_name("D"), "deadline: mark the points that train within D days")
      ("price-per-gpu-hour", po::value(&price)->value_name("USD"), "for the cost column")
      ("gpu-power-watts", po::value(&watts)->value_name("W"), "for the energy column (GPUs only)")
      ("global-batch-size", po::value(&batch)->value_name("B"), "sequences per step (default: ~4M tokens)")
      ("seq-length", po::value(&seq)->value_name("S"), "sequence length (default: the model's)")
      ("out", po::value(&out_dir)->value_name("DIR"), "where report.json, report.md and report.html go")
      ("renderer", po::value(&renderer)->value_name("SCRIPT"), "the plotting script (default scripts/render_report.py)")
      ("error-bands", po::value(&bands_path)->value_name("FILE"),
       "validated error per GPU stated on every page (default: the shipped validation/error_bands.json)")
      ("no-render", "write report.json only")
      ("threads", po::value(&threads)->value_name("N"), "simulation threads (default: every core)")
      ("quiet,q", "no progress on standard error")
      ("help,h", "show this help");
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
  std::vector<std::int64_t> gpu_counts;
  for (const auto& g : split(gpus_list, ',')) {
    const auto v = whole_number(g);
    if (!v || *v < 1 || *v > (1 << 24))
      throw ConfigError(fmt::format("--gpus: '{}' is not a GPU count in [1, 16777216]; give counts separated by commas", g));
    gpu_counts.push_back(*v);
  }
  const model::ModelSpec model = config::load_model(model_path);
  note_sequence_length(model_path, model, seq > 0);
  std::vector<hardware::HardwareProfile> profiles;
  for (const auto& path : split(hw_list, ',')) profiles.push_back(config::load_hardware(path));
  const nlohmann::ordered_json validated = validated_error_json(profiles, config::load_error_bands(bands_path), bands_path);
  const std::int64_t seq_length = seq > 0 ? seq : model.seq_length;
  if (batch <= 0) batch = default_batch(seq_length);
  const bool quiet = vm.count("quiet") > 0;

  std::vector<Point> points;
  std::size_t n = 0;
  for (const auto& hw : profiles)
    for (const std::int64_t g : gpu_counts) {
      if (!quiet) fmt::print(stderr, "[{}/{}] {} × {}: searching strategies\n", ++n, profiles.size() * gpu_counts.size(), g, hw.name);
      points.push_back(plan_point(model, hw, g, batch, seq > 0 ? std::optional(seq) : std::nullopt, {}, threads,
                                  quiet));
    }

  const double tokens_per_step = static_cast<double>(batch * seq_length);
  const double steps = std::ceil(tokens / tokens_per_step);
  nlohmann::ordered_json j;
  j["schema"] = "ptsim-capacity-report/1";
  j["model"] = model.name;
  j["tokens"] = tokens;
  j["global_batch_size"] = batch;
  j["seq_length"] = seq_length;
  j["days"] = vm.count("days") ? nlohmann::ordered_json(days) : nlohmann::ordered_json(nullptr);
  j["price_per_gpu_hour"] = vm.count("price-per-gpu-hour") ? nlohmann::ordered_json(price) : nlohmann::ordered_json(nullptr);
  j["gpu_power_watts"] = vm.count("gpu-power-watts") ? nlohmann::ordered_json(watts) : nlohmann::ordered_json(nullptr);
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
    const double time = steps * r.step_time_s;
    const double gpu_hours = time * static_cast<double>(p.gpus) / 3600;
    nlohmann::ordered_json stages = nlohmann::ordered_json::array();
    for (const auto& s : r.stages)
      stages.push_back({{"stage", s.stage},
                        {"peak_bytes", s.peak_bytes},
                        {"static_bytes", s.static_bytes},
                        {"activations_peak_bytes", s.activations_peak_bytes}});
    nlohmann::ordered_json row = {{"hardware", p.hardware_name},
                                  {"gpu", p.gpu},
                                  {"gpus", p.gpus},
                                  {"fits", true},
                                  {"label", p.best->label},
                                  {"strategy", strategy_json(p.best->strategy)},
                                  {"step_time_s", r.step_time_s},
                                  {"mfu", r.throughput.mfu},
                                  {"tokens_per_s", r.throughput.tokens_per_s},
                                  {"steps", static_cast<std::int64_t>(steps)},
                                  {"time_to_train_s", time},
                                  {"time_to_train_days", time / 86400},
                                  {"gpu_hours", gpu_hours},
                                  {"cost_usd", price > 0 ? nlohmann::ordered_json(gpu_hours * price) : nullptr},
                                  {"energy_mwh", watts > 0 ? nlohmann::ordered_json(watts * static_cast<double>(p.gpus) * time / 3.6e9) : nullptr},
                                  {"meets_deadline", days > 0 ? nlohmann::ordered_json(time / 86400 <= days) : nullptr},
                                  {"breakdown_s", report::breakdown_json(r.breakdown)},
                                  {"capacity_bytes", r.memory.capacity_bytes},
                                  {"stages", stages},
                                  {"searched", p.searched},
                                  {"simulated", p.simulated}};
    list.push_back(row);
    fmt::print(out, "{:<22} {:>6} {:>8.3f}s {:>5.1f}% {:>9.1f} {:>12.0f} {:>12} {:>10}  {}\n", p.hardware_name, p.gpus,
               r.step_time_s, 100 * r.throughput.mfu, time / 86400, gpu_hours,
               price > 0 ? fmt::format("${:.0f}", gpu_hours * price) : "-",
               watts > 0 ? fmt::format("{:.1f}", watts * static_cast<double>(p.gpus) * time / 3.6e9) : "-",
               p.best->label);
    if (fastest == nullptr || r.step_time_s * steps < fastest->best->result.step_time_s * steps) {
      fastest = &p;
      fastest_hw = &hw;
    }
  }
  j["points"] = list;
  j["validated_error"] = validated;
  print_validated_error(out, validated);
  j["timeline"] = fastest != nullptr ? timeline_json(model, *fastest_hw, *fastest->best) : nlohmann::ordered_json(nullptr);

  make_output_directory("--out", out_dir);
  const std::string json_path = (std::filesystem::path(out_dir) / "report.json").string();
  std::vector<std::string> read = split(hw_list, ',');
  read.push_back(model_path);
  read.push_back(bands_path);
  write_output_file(json_path, read, [&](std::ostream& o) { o << j.dump(1) << '\n'; });
  fmt::print(out, "wrote {}\n", json_path);
  if (vm.count("no-render")) return fastest == nullptr ? 3 : 0;
  const std::filesystem::path script = renderer_path(renderer);
  if (!std::filesystem::exists(script))
    throw ConfigError(fmt::format("the report renderer {} does not exist; give --renderer SCRIPT or --no-render",
                                  script.string()));
  // Debian's own python3 carries Debian's matplotlib (scripts/setup.sh installs it).
  const std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string command = fmt::format("'{}' '{}' '{}' '{}'", python, script.string(), json_path, out_dir);
  const int status = std::system(command.c_str());
  if (status != 0)
    throw ConfigError(fmt::format("rendering the report failed ({}): {}; report.json is written", status, command));
  fmt::print(out, "wrote {}/report.md and {}/report.html\n", out_dir, out_dir);
  return fastest == nullptr ? 3 : 0;
}

int run_sweep(const std::vector<std::string>& args, std::ostream& out) {
  std::string spec_path, json, csv;
  unsigned threads = 0;
  po::options_description options("Options");
  options.add_options()
      ("spec", po::value(&spec_path)->value_name("SPEC.json"), "the sweep")
      ("json", po::value(&json)->value_name("FILE"), "write the points as JSON")
      ("csv", po::value(&csv)->value_name("FILE"), "write the points as CSV")
      ("threads", po::value(&threads)->value_name("N"), "simulation threads (default: every core)")
      ("quiet,q", "no progress on standard error")
      ("help,h", "show this help");
  po::positional_options_description positional;
  positional.add("spec", 1);
  po::variables_map vm;
  parse_args(args, options, &positional, vm, "sweep");
  if (vm.count("help")) {
    std::ostringstream text;
    text << options;
    fmt::print(out, "{}{}", kSweepUsage, text.str());
    return 0;
  }
  if (spec_path.empty()) throw ConfigError("ptsim sweep: give SPEC.json; see --help");
  check_output_paths({{"--json", json}, {"--csv", csv}}, {spec_path});
  const nlohmann::json spec = config::read_json_file(spec_path);
  const auto base = std::filesystem::path(spec_path).parent_path();
  const auto resolve = [&](const std::string& p) {
    const auto candidate = base / p;
    return std::filesystem::exists(candidate) ? candidate.string() : p;
  };
  const auto need = [&](const char* key, bool (nlohmann::json::*is)() const noexcept, const char* what) -> const nlohmann::json& {
    if (!spec.is_object() || !spec.contains(key) || !(spec.at(key).*is)())
      throw ConfigError(fmt::format("{}: /{} must be {}; see ptsim sweep --help", spec_path, key, what));
    return spec.at(key);
  };
  const std::string model_path = resolve(need("model", &nlohmann::json::is_string, "a model file path").get<std::string>());
  const auto batch = need("global_batch_size", &nlohmann::json::is_number_integer, "an integer").get<std::int64_t>();
  if (batch < 1) throw ConfigError(fmt::format("{}: /global_batch_size = {} must be ≥ 1", spec_path, batch));
  std::optional<std::int64_t> seq;
  if (spec.contains("seq_length")) seq = need("seq_length", &nlohmann::json::is_number_integer, "an integer").get<std::int64_t>();
  std::vector<std::int64_t> gpus;
  for (const auto& g : need("gpus", &nlohmann::json::is_array, "an array of GPU counts")) {
    if (!g.is_number_integer() || g.get<std::int64_t>() < 1 || g.get<std::int64_t>() > (1 << 24))
      throw ConfigError(fmt::format("{}: /gpus holds {}; give GPU counts in [1, 16777216]", spec_path, g.dump()));
    gpus.push_back(g.get<std::int64_t>());
  }
  for (const auto& [key, value] : spec.items())
    if (key != "model" && key != "global_batch_size" && key != "seq_length" && key != "gpus" && key != "hardware")
      throw ConfigError(fmt::format("{}: unknown key '{}'; accepted keys: model, global_batch_size, seq_length, gpus, hardware",
                                    spec_path, key));
  const model::ModelSpec model = config::load_model(model_path);
  note_sequence_length(model_path, model, seq.has_value());
  struct Entry {
    std::string name;
    hardware::HardwareProfile hw;
  };
  std::vector<Entry> entries;
  const auto& hardware_list = need("hardware", &nlohmann::json::is_array, "an array of hardware entries");
  for (std::size_t i = 0; i < hardware_list.size(); ++i) {
    const auto& h = hardware_list[i];
    const std::string at = fmt::format("{}: /hardware/{}", spec_path, i);
    if (!h.is_object() || !h.contains("profile") || !h.at("profile").is_string())
      throw ConfigError(fmt::format("{}/profile must name a hardware profile file", at));
    for (const auto& [key, value] : h.items())
      if (key != "name" && key != "profile" && key != "overrides")
        throw ConfigError(fmt::format("{}: unknown key '{}'; accepted keys: name, profile, overrides", at, key));
    const std::string profile_path = resolve(h.at("profile").get<std::string>());
    nlohmann::json profile = config::read_json_file(profile_path);
    if (!profile.is_object()) throw ConfigError(fmt::format("{}: a hardware profile is a JSON object", profile_path));
    std::string name = h.value("name", profile.value("name", profile_path));
    if (h.contains("overrides")) {
      if (!h.at("overrides").is_object()) throw ConfigError(fmt::format("{}/overrides must be an object of JSON pointers", at));
      for (const auto& [pointer, value] : h.at("overrides").items()) {
        nlohmann::json::json_pointer ptr;
        try {
          ptr = nlohmann::json::json_pointer(pointer);
        } catch (const nlohmann::json::exception&) {
          throw ConfigError(fmt::format("{}/overrides: '{}' is not a JSON pointer (e.g. /network/nic/bandwidth_GBps)", at, pointer));
        }
        if (!profile.contains(ptr))
          throw ConfigError(fmt::format("{}/overrides: {} is not a key of {}", at, pointer, profile_path));
        profile[ptr] = value;
        // A what-if figure's source is the sweep that set it.
        if (profile.contains("sources") && profile["sources"].contains(pointer))
          profile["sources"][pointer] = fmt::format("what-if override from {}", spec_path);
      }
    }
    profile["name"] = name;
    entries.push_back({name, config::parse_hardware(profile, fmt::format("{} ({})", profile_path, at))});
  }

  const bool quiet = vm.count("quiet") > 0;
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  std::string csv_text = "hardware,gpus,fits,step_time_s,mfu,tokens_per_s,peak_memory_bytes,strategy\n";
  fmt::print(out, "{} · global batch {} · {} hardware × {} GPU counts\n", model.name, batch, entries.size(), gpus.size());
  fmt::print(out, "{:<28} {:>6} {:>9} {:>6} {:>12} {:>10}  {}\n", "hardware", "GPUs", "step", "MFU", "tokens/s", "memory",
             "best strategy");
  std::size_t n = 0;
  for (const auto& e : entries)
    for (const std::int64_t g : gpus) {
      if (!quiet) fmt::print(stderr, "[{}/{}] {} × {}\n", ++n, entries.size() * gpus.size(), g, e.name);
      const Point p = plan_point(model, e.hw, g, batch, seq, {}, threads, quiet);
      if (!p.best) {
        points.push_back({{"hardware", e.name}, {"gpus", g}, {"fits", false}, {"reason", p.reason}});
        csv_text += fmt::format("\"{}\",{},false,,,,,\n", e.name, g);
        fmt::print(out, "{:<28} {:>6} {:>9}  {}\n", e.name, g, "-", p.reason);
        continue;
      }
      const auto& r = p.best->result;
      points.push_back({{"hardware", e.name},
                        {"gpus", g},
                        {"fits", true},
                        {"label", p.best->label},
                        {"strategy", strategy_json(p.best->strategy)},
                        {"step_time_s", r.step_time_s},
                        {"mfu", r.throughput.mfu},
                        {"tokens_per_s", r.throughput.tokens_per_s},
                        {"peak_memory_bytes", r.memory.peak_bytes},
                        {"breakdown_s", report::breakdown_json(r.breakdown)},
                        {"searched", p.searched},
                        {"simulated", p.simulated}});
      csv_text += fmt::format("\"{}\",{},true,{},{},{},{},\"{}\"\n", e.name, g, r.step_time_s, r.throughput.mfu,
                              r.throughput.tokens_per_s, r.memory.peak_bytes, p.best->label);
      fmt::print(out, "{:<28} {:>6} {:>8.3f}s {:>5.1f}% {:>12.4g} {:>9.1f}G  {}\n", e.name, g, r.step_time_s,
                 100 * r.throughput.mfu, r.throughput.tokens_per_s,
                 static_cast<double>(r.memory.peak_bytes) / (1 << 30), p.best->label);
    }
  nlohmann::ordered_json j = {{"schema_version", 1}, {"model", model.name}, {"global_batch_size", batch},
                              {"seq_length", seq.value_or(model.seq_length)}, {"points", points}};
  std::vector<OutputFile> outputs;
  if (!json.empty()) outputs.push_back({json, [&](std::ostream& o) { o << j.dump(2) << '\n'; }});
  if (!csv.empty()) outputs.push_back({csv, [&](std::ostream& o) { o << csv_text; }});
  write_output_files(outputs, {spec_path, model_path});
  return 0;
}

}  // namespace ptsim::cli

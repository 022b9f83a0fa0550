// `ptsim sweep`: the best strategy over a grid of hardware what-ifs (the
// spec is config::load_sweep_spec's).
#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "output_file.hpp"
#include "parse_args.hpp"
#include "plan_point.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/load_model.hpp"
#include "ptsim/config/load_sweep_spec.hpp"
#include "ptsim/report/json_report.hpp"
#include "run_inputs.hpp"

namespace ptsim::cli {

namespace po = boost::program_options;

namespace {

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

}  // namespace

int run_sweep(const std::vector<std::string>& args, std::ostream& out) {
  std::string spec_path, json, csv;
  unsigned threads = 0;
  po::options_description options("Options");
  // Boost.Program_options' chained calls, one option a line:
  // clang-format off
  options.add_options()
      ("spec", po::value(&spec_path)->value_name("SPEC.json"), "the sweep")
      ("json", po::value(&json)->value_name("FILE"), "write the points as JSON")
      ("csv", po::value(&csv)->value_name("FILE"), "write the points as CSV")
      ("threads", po::value(&threads)->value_name("N"), "simulation threads (default: every core)")
      ("quiet,q", "no progress on standard error")
      ("help,h", "show this help");
  // clang-format on
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
  config::InputFiles read;
  read.record(spec_path);
  check_output_paths({{"--json", json}, {"--csv", csv}}, read);
  const config::SweepSpec spec = config::load_sweep_spec(spec_path, read);
  const std::string& model_path = spec.model_path;
  const std::int64_t batch = spec.global_batch_size;
  const std::optional<std::int64_t> seq = spec.seq_length;
  const std::vector<std::int64_t>& gpus = spec.gpus;
  const std::vector<config::SweepHardware>& entries = spec.hardware;
  const model::ModelSpec model = config::load_model(model_path, read);
  note_sequence_length(model_path, model, seq.has_value());
  note_unmeasured_kernels(model_path, model);

  const bool quiet = vm.count("quiet") > 0;
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  std::string csv_text = "hardware,gpus,fits,step_time_s,mfu,tokens_per_s,peak_memory_bytes,strategy\n";
  fmt::print(out, "{} · global batch {} · {} hardware × {} GPU counts\n", model.name, batch, entries.size(),
             gpus.size());
  fmt::print(out, "{:<28} {:>6} {:>9} {:>6} {:>12} {:>10}  {}\n", "hardware", "GPUs", "step", "MFU", "tokens/s",
             "memory", "best strategy");
  std::vector<std::pair<std::int64_t, std::int64_t>> order;
  for (const auto& e : entries)
    for (const std::int64_t g : gpus) order.emplace_back(g, e.profile.nvlink.domain_gpus);
  SharedSpaces spaces(order);
  std::size_t n = 0;
  for (const auto& e : entries)
    for (const std::int64_t g : gpus) {
      if (!quiet) fmt::print(stderr, "[{}/{}] {} × {}\n", ++n, entries.size() * gpus.size(), g, e.name);
      const Point p = plan_point(model, e.profile, g, batch, seq, {}, threads, quiet, spaces);
      if (!p.best) {
        points.push_back({{"hardware", e.name}, {"gpus", g}, {"fits", false}, {"reason", p.reason}});
        csv_text += fmt::format("\"{}\",{},false,,,,,\n", e.name, g);
        fmt::print(out, "{:<28} {:>6} {:>9}  {}\n", e.name, g, "-", p.reason);
        continue;
      }
      const auto& r = p.best->result;
      nlohmann::ordered_json row = {{"hardware", e.name}, {"gpus", g}, {"fits", true}};
      append_best_step(row, *p.best);
      row["peak_memory_bytes"] = r.memory.peak_bytes;
      row["breakdown_s"] = report::breakdown_json(r.breakdown);
      append_search_counts(row, p);
      points.push_back(row);
      csv_text += fmt::format("\"{}\",{},true,{},{},{},{},\"{}\"\n", e.name, g, r.step_time_s, r.throughput.mfu,
                              r.throughput.tokens_per_s, r.memory.peak_bytes, p.best->label);
      fmt::print(out, "{:<28} {:>6} {:>8.3f}s {:>5.1f}% {:>12.4g} {:>9.1f}G  {}\n", e.name, g, r.step_time_s,
                 100 * r.throughput.mfu, r.throughput.tokens_per_s,
                 static_cast<double>(r.memory.peak_bytes) / (1 << 30), p.best->label);
    }
  nlohmann::ordered_json j = {{"schema_version", 1},
                              {"model", model.name},
                              {"global_batch_size", batch},
                              {"seq_length", seq.value_or(model.seq_length)},
                              {"points", points}};
  std::vector<OutputFile> outputs;
  if (!json.empty()) outputs.push_back({json, [&](std::ostream& o) { o << j.dump(2) << '\n'; }});
  if (!csv.empty()) outputs.push_back({csv, [&](std::ostream& o) { o << csv_text; }});
  write_output_files(outputs, read);
  return 0;
}

}  // namespace ptsim::cli

// Model, hardware and strategy inputs of a command (see run_inputs.hpp).
#include "run_inputs.hpp"

#include <fmt/format.h>

#include <optional>

#include "ptsim/common/error.hpp"
#include "ptsim/config/load_hardware.hpp"
#include "ptsim/config/load_model.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "ptsim/config/strategy_input.hpp"

namespace ptsim::cli {

namespace po = boost::program_options;

namespace {

// Boost registers one name per option: each Megatron name and its alias are
// separate options that must not both be given.
std::optional<std::int64_t> pick(const po::variables_map& vm, const char* long_name,
                                 const char* short_name, const char* field,
                                 config::StrategyInput& input) {
  const bool has_long = vm.count(long_name) > 0;
  const bool has_short = short_name != nullptr && vm.count(short_name) > 0;
  if (has_long && has_short)
    throw ConfigError(fmt::format("--{} and --{} set the same value; give one of them", long_name,
                                  short_name));
  if (!has_long && !has_short) return std::nullopt;
  const char* used = has_long ? long_name : short_name;
  input.origin[field] = fmt::format("--{}", used);
  return vm[used].as<std::int64_t>();
}

std::optional<std::string> pick_text(const po::variables_map& vm, const char* flag, const char* field,
                                     config::StrategyInput& input) {
  if (!vm.count(flag)) return std::nullopt;
  input.origin[field] = fmt::format("--{}", flag);
  return vm[flag].as<std::string>();
}

}  // namespace

po::options_description input_options(RunInputs& f) {
  po::options_description inputs("Inputs");
  inputs.add_options()
      ("model", po::value(&f.model)->value_name("FILE"),
       "model: ptsim JSON (Megatron-LM names) or a Hugging Face config.json")
      ("hw", po::value(&f.hw)->value_name("FILE"), "hardware profile, e.g. hw_profiles/h100-sxm5-80gb.json")
      ("strategy", po::value(&f.strategy)->value_name("FILE"),
       "strategy file with the keys of the flags below (flags override it)");
  return inputs;
}

po::options_description strategy_options() {
  po::options_description strategy("Strategy (Megatron-LM names; short aliases)");
  strategy.add_options()
      ("gpus", po::value<std::int64_t>()->value_name("N"), "GPUs in the job (world size)")
      ("tensor-model-parallel-size", po::value<std::int64_t>()->value_name("T"), "tensor-parallel size (default 1)")
      ("tp", po::value<std::int64_t>()->value_name("T"), "alias of --tensor-model-parallel-size")
      ("pipeline-model-parallel-size", po::value<std::int64_t>()->value_name("P"), "pipeline stages (default 1)")
      ("pp", po::value<std::int64_t>()->value_name("P"), "alias of --pipeline-model-parallel-size")
      ("data-parallel-size", po::value<std::int64_t>()->value_name("D"), "data-parallel size (default gpus / (tp·pp))")
      ("dp", po::value<std::int64_t>()->value_name("D"), "alias of --data-parallel-size")
      ("micro-batch-size", po::value<std::int64_t>()->value_name("B"), "sequences per micro-batch (default 1)")
      ("global-batch-size", po::value<std::int64_t>()->value_name("B"), "sequences per step over all replicas (required)")
      ("seq-length", po::value<std::int64_t>()->value_name("S"), "sequence length (default: the model's)")
      ("schedule", po::value<std::string>()->value_name("NAME"), "naive | gpipe | 1f1b (default 1f1b)")
      ("recompute", po::value<std::string>()->value_name("MODE"), "activation recomputation: none | full (default none)")
      ("rank-order", po::value<std::string>()->value_name("ORDER"),
       "how ranks map to parallel coordinates, innermost first (default tp-cp-ep-dp-pp, Megatron's)")
      ("attention-backend", po::value<std::string>()->value_name("NAME"),
       "flash (fused attention kernels, default) | unfused (separate QK, softmax, dropout, PV kernels)")
      ("precision", po::value<std::string>()->value_name("DTYPE"),
       "inputs of the layers' GEMMs: bf16 (default) | fp8");
  return strategy;
}

LoadedRun load_run(const RunInputs& inputs, const po::variables_map& vm, const std::string& command) {
  if (inputs.model.empty()) throw ConfigError(fmt::format("{}: --model FILE is required; see --help", command));
  if (inputs.hw.empty()) throw ConfigError(fmt::format("{}: --hw FILE is required; see --help", command));
  config::StrategyInput flags;
  flags.gpus = pick(vm, "gpus", nullptr, "gpus", flags);
  flags.tp = pick(vm, "tensor-model-parallel-size", "tp", "tp", flags);
  flags.pp = pick(vm, "pipeline-model-parallel-size", "pp", "pp", flags);
  flags.dp = pick(vm, "data-parallel-size", "dp", "dp", flags);
  flags.micro_batch_size = pick(vm, "micro-batch-size", nullptr, "micro_batch_size", flags);
  flags.global_batch_size = pick(vm, "global-batch-size", nullptr, "global_batch_size", flags);
  flags.seq_length = pick(vm, "seq-length", nullptr, "seq_length", flags);
  flags.schedule = pick_text(vm, "schedule", "schedule", flags);
  flags.recompute = pick_text(vm, "recompute", "recompute", flags);
  flags.rank_order = pick_text(vm, "rank-order", "rank_order", flags);
  flags.attention_backend = pick_text(vm, "attention-backend", "attention_backend", flags);
  flags.precision = pick_text(vm, "precision", "precision", flags);
  const config::StrategyInput input =
      inputs.strategy.empty() ? flags : config::merge(config::load_strategy(inputs.strategy), flags);
  LoadedRun run;
  const model::ModelSpec model = config::load_model(inputs.model);
  run.hardware = config::load_hardware(inputs.hw);
  const config::ResolvedRun resolved = config::resolve_run(model, input);
  run.model = resolved.model;
  run.parallel = resolved.parallel;
  return run;
}

}  // namespace ptsim::cli

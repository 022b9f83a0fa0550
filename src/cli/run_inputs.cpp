// Model, hardware and strategy inputs of a command (see run_inputs.hpp).
#include "run_inputs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <variant>

#include "ptsim/common/error.hpp"
#include "ptsim/config/load_hardware.hpp"
#include "ptsim/config/load_model.hpp"
#include "ptsim/config/load_stack.hpp"
#include "ptsim/config/megatron_args.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "ptsim/config/strategy_input.hpp"
#include "ptsim/hardware/power_limit.hpp"
#include "shipped_files.hpp"

namespace ptsim::cli {

namespace po = boost::program_options;

namespace {

// Boost registers one name per option: each Megatron name and its alias are
// separate options that must not both be given. Returns the name used.
std::optional<std::string> given(const po::variables_map& vm, const std::string& flag, const std::string& alias) {
  const auto set = [&](const std::string& name) {
    return !name.empty() && vm.count(name) > 0 && !vm[name].defaulted();
  };
  if (set(flag) && set(alias))
    throw ConfigError(fmt::format("--{} and --{} set the same value; give one of them", flag, alias));
  if (set(flag)) return flag;
  if (set(alias)) return alias;
  return std::nullopt;
}

std::string flag_name(const config::StrategyField& f) {
  std::string flag = f.key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

}  // namespace

po::options_description input_options(RunInputs& f) {
  po::options_description inputs("Inputs");
  // clang-format off
  inputs.add_options()
      ("model", po::value(&f.model)->value_name("FILE"),
       "model: ptsim JSON (Megatron-LM names) or a Hugging Face config.json")
      ("hw", po::value(&f.hw)->value_name("FILE"), "hardware profile, e.g. hw_profiles/h100-sxm5-80gb.json")
      ("strategy", po::value(&f.strategy)->value_name("FILE"),
       "strategy file with the keys of the flags below (flags override it)")
      ("stack", po::value(&f.stack)->value_name("FILE"),
       "software stack: a ptsim-stack/1 file, or a shipped one by name (configs/stacks/: megatron-core, "
       "megatron-lm-2021, megatron-lm-2022, megatron-lm-2023, deepspeed-zero3-2021, torchtitan-2024-12, "
       "composer-2024): what the "
       "framework does, "
       "beneath --strategy and the flags; plan searches only its schedules")
      ("power-limit-w", po::value<double>()->value_name("W")->notifier([&f](double w) { f.power_limit_w = w; }),
       "what-if: the GPUs under this board power limit, in W; the tensor cores keep the share of "
       "training throughput measured on an H100 at that fraction of its maximum (arXiv:2603.16164), "
       "e.g. 500 on a 700 W part: 0.915");
  // clang-format on
  return inputs;
}

po::options_description strategy_options() {
  po::options_description strategy("Strategy (Megatron-LM names; short aliases)");
  for (const auto& f : config::strategy_fields()) {
    const std::string flag = flag_name(f);
    const std::string alias = f.alias;
    std::visit(
        [&](auto member) {
          using Value = typename std::remove_reference_t<decltype(config::StrategyInput{}.*member)>::value_type;
          if constexpr (std::is_same_v<Value, bool>) {
            strategy.add_options()(flag.c_str(), po::bool_switch(), f.help);
          } else {
            strategy.add_options()(flag.c_str(), po::value<Value>()->value_name(f.value_name), f.help);
            if (!alias.empty())
              strategy.add_options()(alias.c_str(), po::value<Value>()->value_name(f.value_name),
                                     fmt::format("alias of --{}", flag).c_str());
          }
        },
        f.member);
  }
  return strategy;
}

config::StrategyInput strategy_input(const RunInputs& inputs, config::InputFiles& read, const po::variables_map& vm,
                                     const std::optional<config::SoftwareStack>& stack) {
  config::StrategyInput flags;
  for (const auto& f : config::strategy_fields()) {
    const auto used = given(vm, flag_name(f), f.alias);
    if (!used) continue;
    flags.origin[f.field] = "--" + *used;
    std::visit(
        [&](auto member) {
          using Value = typename std::remove_reference_t<decltype(flags.*member)>::value_type;
          const Value value = vm[*used].as<Value>();
          if constexpr (std::is_same_v<Value, std::int64_t>) {
            if (value < f.min || value > f.max)
              throw ConfigError(fmt::format("--{} = {} must lie in [{}, {}]; see --help", *used, value, f.min, f.max));
          } else if constexpr (std::is_same_v<Value, double>) {
            if (!(value > 0 || (f.min == 0 && value == 0)) || value > 1e6)
              throw ConfigError(fmt::format("--{} = {} must be a {} number up to 1e6; see --help", *used, value,
                                            f.min == 0 ? "non-negative" : "positive"));
          } else if constexpr (std::is_same_v<Value, std::string>) {
            if (!f.choices.empty() && std::find(f.choices.begin(), f.choices.end(), value) == f.choices.end())
              throw ConfigError(fmt::format("--{} = {} is not one of {}; see --help", *used, value,
                                            fmt::join(f.choices, ", ")));
          }
          flags.*member = value;
        },
        f.member);
  }
  config::StrategyInput given =
      inputs.strategy.empty() ? flags : config::merge(config::load_strategy(inputs.strategy, read), flags);
  return stack ? config::apply_stack(*stack, given) : given;
}

std::string stack_path(const std::string& stack) {
  // A bare name is a shipped stack; anything else a file.
  const bool bare = stack.find('/') == std::string::npos && stack.find('.') == std::string::npos;
  if (!bare) return stack;
  const std::filesystem::path dir = shipped_file("configs/stacks");
  const std::filesystem::path path = dir / (stack + ".json");
  if (!std::filesystem::exists(path)) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
      if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
    std::sort(names.begin(), names.end());
    throw ConfigError(fmt::format("--stack {}: no shipped stack of that name (in {}: {}); or give a stack file's path",
                                  stack, dir.string(), fmt::join(names, ", ")));
  }
  return path.string();
}

std::optional<config::SoftwareStack> stack_input(const RunInputs& inputs, config::InputFiles& read) {
  if (inputs.stack.empty()) return std::nullopt;
  return config::load_stack(stack_path(inputs.stack), read);
}

void note_sequence_length(const std::string& model_path, const model::ModelSpec& m, bool seq_given) {
  // Llama 3 pre-trained at 8,192 tokens and reached 128K in a later stage
  // (Dubey et al. 2024, §3.4); configs of such models give the latter.
  constexpr std::int64_t kLongest = 8192;
  if (seq_given || m.seq_length <= kLongest || m.seq_length_from != "max_position_embeddings") return;
  fmt::print(stderr,
             "note: {}: sequence length {} is the config's max_position_embeddings, the longest context the model "
             "accepts, not necessarily the one it trains at (Llama 3 pre-trained at 8192 and was extended to 128K "
             "later); give --seq-length for the length you train at\n",
             model_path, m.seq_length);
}

void note_unmeasured_kernels(const std::string& model_path, const model::ModelSpec& m) {
  if (!m.has_mamba_layers()) return;
  fmt::print(stderr,
             "note: {}: its Mamba-2 layers' SSD kernels are priced at the SMs' rates measured for mamba_ssm's "
             "training kernels on an H100, forward and backward, scaled by SM count and clock (unmeasured on "
             "Blackwell); on Nemotron 3's runs of Megatron-Bridge's 26.08 table ptsim's steps are 6-35% short "
             "(docs/accuracy.md)\n",
             model_path);
}

std::vector<std::string> split_megatron_args(const std::vector<std::string>& args, RunInputs& inputs) {
  const auto dashes = std::find(args.begin(), args.end(), "--");
  if (dashes == args.end()) return args;
  inputs.has_megatron = true;
  inputs.megatron.assign(dashes + 1, args.end());
  return {args.begin(), dashes};
}

namespace {

void require_model_input(const RunInputs& inputs, const std::string& command) {
  if (!inputs.has_megatron && inputs.model.empty())
    throw ConfigError(fmt::format("{}: --model FILE (or a Megatron-LM launch line after --) is required; see --help",
                                  command));
}

}  // namespace

model::ModelSpec load_model_input(const RunInputs& inputs, config::InputFiles& read, config::StrategyInput& strategy,
                                  const std::string& command, LaunchLayout layout) {
  require_model_input(inputs, command);
  if (!inputs.has_megatron) {
    model::ModelSpec m = config::load_model(inputs.model, read);
    note_sequence_length(inputs.model, m, strategy.seq_length.has_value());
    note_unmeasured_kernels(inputs.model, m);
    return m;
  }
  if (!inputs.model.empty())
    throw ConfigError(fmt::format("{}: --model {} and a Megatron-LM launch line after -- both give the model; "
                                  "give one of them",
                                  command, inputs.model));
  if (inputs.megatron.empty())
    throw ConfigError(fmt::format("{}: nothing after --; put pretrain_gpt.py's arguments there", command));
  config::MegatronLaunch launch = config::parse_megatron_args(inputs.megatron);
  note_unmeasured_kernels("the launch line", launch.model);
  if (layout == LaunchLayout::Search) {
    auto& s = launch.strategy;
    for (auto* field : {&s.tp, &s.pp, &s.dp, &s.cp, &s.ep, &s.expert_tp, &s.vpp, &s.layers_per_virtual_stage,
                        &s.first_stage_layers, &s.last_stage_layers, &s.micro_batch_size, &s.recompute_num_layers,
                        &s.zero})
      field->reset();
    for (auto* field : {&s.sequence_parallel, &s.distributed_optimizer}) field->reset();
    s.pipeline_layout.reset();
    s.recompute.reset();
    s.schedule.reset();
  }
  // ptsim's flags over Megatron's: the same value is fine, another one a conflict.
  for (const auto& f : config::strategy_fields()) {
    std::visit(
        [&](auto member) {
          const auto& ours = strategy.*member;
          const auto& theirs = launch.strategy.*member;
          if (ours && theirs && *ours != *theirs)
            throw ConfigError(fmt::format("{}: {} disagrees with {}; drop one of them", command,
                                          strategy.where(f.field), launch.strategy.where(f.field)));
        },
        f.member);
  }
  strategy = config::merge(launch.strategy, strategy);
  for (const auto& note : launch.notes) fmt::print(stderr, "note: {}\n", note);
  if (!launch.ignored.empty())
    fmt::print(stderr, "note: Megatron-LM flags with no effect on a step, ignored: {}\n",
               fmt::join(launch.ignored, " "));
  if (!launch.not_modelled.empty())
    fmt::print(stderr, "note: Megatron-LM flags that change a step in ways ptsim does not model, left out: {}\n",
               fmt::join(launch.not_modelled, " "));
  return launch.model;
}

LoadedRun load_run(const RunInputs& inputs, config::InputFiles& read, const po::variables_map& vm,
                   const std::string& command) {
  require_model_input(inputs, command);  // before --hw, as --help lists them
  if (inputs.hw.empty()) throw ConfigError(fmt::format("{}: --hw FILE is required; see --help", command));
  config::StrategyInput input = strategy_input(inputs, read, vm, stack_input(inputs, read));
  LoadedRun run;
  const model::ModelSpec model = load_model_input(inputs, read, input, command);
  if (input.te_precision_config_file) read.record(*input.te_precision_config_file);  // resolve_run reads it
  run.hardware = load_hardware_input(inputs, read);
  const config::ResolvedRun resolved = config::resolve_run(model, input);
  run.model = resolved.model;
  run.parallel = resolved.parallel;
  return run;
}

hardware::HardwareProfile load_hardware_input(const RunInputs& inputs, config::InputFiles& read) {
  hardware::HardwareProfile hw = config::load_hardware(inputs.hw, read);
  return inputs.power_limit_w ? at_power_limit_flag(std::move(hw), *inputs.power_limit_w) : hw;
}

hardware::HardwareProfile at_power_limit_flag(hardware::HardwareProfile hw, double watts) {
  try {
    return hardware::under_power_limit(std::move(hw), watts);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("--power-limit-w {}: {}", watts, e.what()));
  }
}

void record_files(const RunInputs& inputs, config::InputFiles& read) {
  read.record(inputs.model);
  read.record(inputs.hw);
  read.record(inputs.strategy);
  if (!inputs.stack.empty()) read.record(stack_path(inputs.stack));
}

}  // namespace ptsim::cli

// The inputs every command that simulates a run takes — model, hardware and
// strategy, as files and Megatron-LM-named flags — and their loading.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ptsim/config/load_stack.hpp"
#include "ptsim/config/strategy_input.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/strategy/parallel_config.hpp"

namespace ptsim::cli {

struct RunInputs {
  std::string model;
  std::string hw;
  std::string strategy;
  std::string stack;  // --stack: a stack file, or a shipped stack's name
  /// --power-limit-w: the profile under that board power limit (hardware::under_power_limit).
  std::optional<double> power_limit_w;
  /// A Megatron-LM launch line: what follows "--" on ptsim's command line,
  /// the arguments pretrain_gpt.py receives (in place of --model).
  std::vector<std::string> megatron;
  bool has_megatron = false;
};

/// Splits a command's arguments at the first "--": ptsim's own before it,
/// Megatron-LM's after it (into inputs.megatron).
std::vector<std::string> split_megatron_args(const std::vector<std::string>& args, RunInputs& inputs);

/// The model of the run — from --model FILE, or from the Megatron launch
/// line, whose strategy flags then come under `strategy` (ptsim's flags
/// win where they agree and are an error where they disagree). Prints once,
/// on standard error, which Megatron flags were ignored and why.
/// Keep: the launch line's parallel layout is the run's (simulate, kernels).
/// Search: it is dropped for a search to choose (plan).
enum class LaunchLayout { Keep, Search };
model::ModelSpec load_model_input(const RunInputs& inputs, config::InputFiles& read, config::StrategyInput& strategy,
                                  const std::string& command, LaunchLayout layout = LaunchLayout::Keep);

/// The profile at --hw, under --power-limit-w where given.
hardware::HardwareProfile load_hardware_input(const RunInputs& inputs, config::InputFiles& read);
/// `hw` under --power-limit-w `watts` (hardware::under_power_limit), its
/// refusal naming the flag.
hardware::HardwareProfile at_power_limit_flag(hardware::HardwareProfile hw, double watts);

/// --model, --hw, --strategy, --stack, --power-limit-w.
boost::program_options::options_description input_options(RunInputs& inputs);
/// --gpus, --tp/--tensor-model-parallel-size, …, --precision.
boost::program_options::options_description strategy_options();

struct LoadedRun {
  model::ModelSpec model;  // with --seq-length applied
  hardware::HardwareProfile hardware;
  strategy::ParallelConfig parallel;
};

/// The --stack file: the path given, or a bare name's shipped file.
std::string stack_path(const std::string& stack);
/// The stack of --stack, if given.
std::optional<config::SoftwareStack> stack_input(const RunInputs& inputs, config::InputFiles& read);

/// The strategy flags given (over the --strategy file's values, over
/// `stack`'s settings: stack_input's), unchecked.
config::StrategyInput strategy_input(const RunInputs& inputs, config::InputFiles& read,
                                     const boost::program_options::variables_map& vm,
                                     const std::optional<config::SoftwareStack>& stack);

/// Warns on standard error when the model's sequence length is a Hugging
/// Face config's max_position_embeddings above 8,192 tokens and no
/// --seq-length was given: the longest context a model accepts is often a
/// later context extension's, not the length it trains at.
void note_sequence_length(const std::string& model_path, const model::ModelSpec& m, bool seq_given);
/// Notes on standard error that a model runs kernels ptsim prices without a
/// measurement and whose published runs it predicts short (a hybrid model's
/// Mamba-2 SSD), so that no one reads its step as validated.
void note_unmeasured_kernels(const std::string& model_path, const model::ModelSpec& m);

/// Loads and cross-checks the inputs, each file recorded in `read`;
/// `command` names the command in errors.
LoadedRun load_run(const RunInputs& inputs, config::InputFiles& read, const boost::program_options::variables_map& vm,
                   const std::string& command);

/// Records the files `inputs` names (before a command checks its outputs).
void record_files(const RunInputs& inputs, config::InputFiles& read);

}  // namespace ptsim::cli

// A Megatron-LM launch line → model and strategy (see megatron_args.hpp).
//
// Each flag is looked up in Megatron's own flag list (internal/megatron_flags,
// generated from its source), which says how many values it takes
// (megatron_launch_flags.cpp); what it means to a step is decided by
// megatron_model_flags.cpp and megatron_strategy_flags.cpp, and a flag
// neither reads is listed here. The model and the strategy are assembled
// as ptsim's own JSON objects and read by parse_model and parse_strategy, so
// that their ranges, cross-checks and messages are the ones every other
// input gets.
#include "ptsim/config/megatron_args.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <string_view>

#include "internal/megatron_launch_flags.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/load_model.hpp"

namespace ptsim::config {

namespace {

using internal::LaunchFlags;

// Flags that change nothing a step costs: data and tokenizer files,
// logging, checkpoints, evaluation, the learning-rate schedule and the
// optimizer's hyperparameters, seeds, initialization, run length, process
// setup. A prefix ends in '-'.
constexpr std::array kNoEffect = {"--adam-",
                                  "--apply-layernorm-1p",
                                  "--async-save",
                                  "--auto-detect-ckpt-format",
                                  "--bias-dropout-fusion",
                                  "--calculate-per-token-loss",
                                  "--init-model-with-meta-device",
                                  "--check-for-nan-in-loss-and-grad",
                                  "--ckpt-",
                                  "--clip-grad",
                                  "--create-attention-mask-in-dataloader",
                                  "--data-",
                                  "--dataloader-type",
                                  "--decoupled-lr",
                                  "--decoupled-min-lr",
                                  "--distributed-backend",
                                  "--distributed-timeout-minutes",
                                  "--empty-unused-memory-level",
                                  "--eod-mask-loss",
                                  "--eval-",
                                  "--exit-",
                                  "--finetune",
                                  "--full-validation",
                                  "--hysteresis",
                                  "--init-method-",
                                  "--initial-loss-scale",
                                  "--load",
                                  "--local-rank",
                                  "--log-",
                                  "--logging-level",
                                  "--loss-scale",
                                  "--lr",
                                  "--lr-",
                                  "--make-vocab-size-divisible-by",
                                  "--manual-gc",
                                  "--merge-file",
                                  "--min-loss-scale",
                                  "--min-lr",
                                  "--mmap-bin-files",
                                  "--mock-data",
                                  "--no-async-save",
                                  "--no-create-attention-mask-in-dataloader",
                                  "--no-load-",
                                  "--no-mmap-bin-files",
                                  "--no-save-",
                                  "--non-persistent-",
                                  "--num-dataset-builder-threads",
                                  "--num-workers",
                                  "--override-opt_param-scheduler",
                                  "--per-split-data-args-path",
                                  "--profile",
                                  "--profile-",
                                  "--pretrained-checkpoint",
                                  "--record-memory-history",
                                  "--reset-attention-mask",
                                  "--reset-position-ids",
                                  "--rotary-base",
                                  "--rotary-percent",
                                  "--rotary-scaling-factor",
                                  "--sample-rate",
                                  "--save",
                                  "--save-",
                                  "--seed",
                                  "--sgd-momentum",
                                  "--split",
                                  "--start-weight-decay",
                                  "--end-weight-decay",
                                  "--step-batch-size-schedule",
                                  "--rampup-batch-size",
                                  "--tensorboard-",
                                  "--test-data-path",
                                  "--tiktoken-",
                                  "--timing-log-",
                                  "--tokenizer-model",
                                  "--train-data-path",
                                  "--train-iters",
                                  "--train-samples",
                                  "--use-checkpoint-args",
                                  "--use-dist-ckpt",
                                  "--use-mcore-models",
                                  "--valid-data-path",
                                  "--vocab-file",
                                  "--wandb-",
                                  "--weight-decay",
                                  "--weight-decay-incr-style",
                                  "--yaml-cfg",
                                  "--use-rotary-position-embeddings",
                                  "--no-rope-fusion",
                                  "--no-persist-layer-norm",
                                  "--log-throughput"};

bool no_effect(std::string_view name) {
  for (const std::string_view pattern : kNoEffect)
    if (pattern.ends_with('-') ? name.starts_with(pattern) : name == pattern) return true;
  return false;
}

}  // namespace

MegatronLaunch parse_megatron_args(const std::vector<std::string>& args) {
  LaunchFlags flags(args);
  for (const char* required :
       {"--num-layers", "--hidden-size", "--num-attention-heads", "--max-position-embeddings", "--seq-length"})
    if (!flags.has(required))
      throw ConfigError(
          fmt::format("{}: {} is missing; ptsim needs the model's size from the launch line "
                      "(Megatron requires --num-layers, --hidden-size, --num-attention-heads and "
                      "--max-position-embeddings; the step's length is --seq-length)",
                      internal::kMegatronWhere, required));
  MegatronLaunch out;
  const nlohmann::json model = internal::megatron_model_json(flags);
  const nlohmann::json strategy = internal::megatron_strategy_json(flags, out.notes);
  // What is left: no effect on a step, or not modelled.
  for (const auto& g : flags.given()) {
    if (flags.taken(g.name)) continue;
    auto& list = no_effect(g.name) ? out.ignored : out.not_modelled;
    if (std::find(list.begin(), list.end(), g.name) == list.end()) list.push_back(g.name);
  }
  out.model = parse_model(model, internal::kMegatronWhere, "megatron");
  out.strategy = parse_strategy(strategy, internal::kMegatronWhere);
  return out;
}

}  // namespace ptsim::config

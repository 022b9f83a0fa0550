// A Megatron-LM launch line as pasted: the arguments pretrain_gpt.py
// receives, read into ptsim's model and strategy. Architecture flags make
// the model (Megatron's defaults where a flag is absent: ffn 4h, or
// 8h/3 rounded down to 64 with --swiglu; LayerNorm; learned positions; tied
// embeddings; biases); precision, recomputation, parallelism, batch, DDP and
// overlap flags make the strategy. Flags that do not change a step (data,
// logging, checkpointing, learning-rate schedule, seeds, optimizer
// hyperparameters) are accepted and listed; Megatron flags that change a
// step in ways ptsim does not model are listed apart; a flag Megatron does
// not have is refused, as are values ptsim cannot honour.
#pragma once

#include <string>
#include <vector>

#include "ptsim/config/strategy_input.hpp"
#include "ptsim/model/model_spec.hpp"

namespace ptsim::config {

struct MegatronLaunch {
  model::ModelSpec model;
  StrategyInput strategy;
  std::vector<std::string> ignored;       // no effect on a step, each once, as given
  std::vector<std::string> not_modelled;  // change a step in Megatron; ptsim leaves them out
  std::vector<std::string> notes;         // what Megatron's own argument checks changed, as it says
};

/// Reads `args` (without the launcher and the script name). Throws
/// ConfigError naming the flag for a flag Megatron-LM does not have (with
/// the Megatron-LM commit its flag list comes from), a missing or bad value,
/// a required architecture flag that is absent (--num-layers, --hidden-size,
/// --num-attention-heads, --max-position-embeddings, --seq-length) and a
/// setting ptsim cannot simulate (e.g. --fp8-recipe mxfp8, --squared-relu).
MegatronLaunch parse_megatron_args(const std::vector<std::string>& args);

}  // namespace ptsim::config

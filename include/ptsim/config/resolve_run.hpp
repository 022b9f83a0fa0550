// Cross-checks of model × strategy, done once before simulation:
// fills the strategy's defaults, derives DP, and rejects every inconsistency
// with one line naming the value, the rule and the fix.
#pragma once

#include "ptsim/config/strategy_input.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/strategy/parallel_config.hpp"

namespace ptsim::config {

struct ResolvedRun {
  model::ModelSpec model;              // with --seq-length applied
  strategy::ParallelConfig parallel;
};

/// Throws ConfigError on the first rule the combination breaks.
ResolvedRun resolve_run(const model::ModelSpec& model, const StrategyInput& strategy);

}  // namespace ptsim::config

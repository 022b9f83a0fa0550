// A software stack file (schema "ptsim-stack/1", configs/stacks/): what a
// training framework does that neither the model, the hardware nor the
// parallel layout decides — its kernels, its overlaps, its gradient types,
// the pipeline schedules it can run — as strategy settings, each with its
// evidence, and what ptsim does not model of it yet, said plainly.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ptsim/config/input_files.hpp"
#include "ptsim/config/strategy_input.hpp"

namespace ptsim::config {

struct SoftwareStack {
  std::string name;       // e.g. "megatron-core"
  std::string framework;  // what ran, for people
  /// Strategy settings the stack fixes (never the layout or the batch).
  StrategyInput settings;
  /// The pipeline schedules it can run (the strategy reader's names); empty: any.
  std::vector<std::string> schedules;
  /// Setting (or "schedules") → its evidence: source file and commit,
  /// measurement or paper.
  std::map<std::string, std::string> evidence;
  /// What the framework does that ptsim does not model yet → why it matters.
  std::map<std::string, std::string> not_modelled;
};

/// Reads a stack file; throws ConfigError naming the file, the key, the rule
/// and the fix (a setting without evidence, a layout key, an unknown schedule).
SoftwareStack load_stack(const std::string& path, InputFiles& inputs);

/// The stack file at `path`, renamed `name`, with the host's time per kernel
/// or collective set to `host_overhead_us` (µs) and `evidence` as its
/// evidence, as JSON text (what `ptsim fit --out-stack` writes); throws
/// ConfigError when the result is not a stack ptsim reads.
std::string fitted_stack_json(const std::string& path, InputFiles& inputs, const std::string& name,
                              double host_overhead_us, const std::string& evidence);

/// The settings under a stack: `stack`'s, then `over` on top; each value the
/// stack gave is marked as coming from it. Throws ConfigError when the
/// strategy pins a schedule the stack cannot run.
StrategyInput apply_stack(const SoftwareStack& stack, const StrategyInput& over);

}  // namespace ptsim::config

// Choosing what a strategy leaves open: the micro-batch size, interleaving,
// recomputation, sequence parallelism, ZeRO — the fastest combination that
// fits in memory, found by simulating each candidate. The validator uses it
// for what published runs did not publish; the planner for what-if search.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ptsim/config/strategy_input.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/report/step_result.hpp"
#include "ptsim/strategy/parallel_config.hpp"

namespace ptsim::plan {

/// One strategy to try and what was chosen for it (field → value, as text).
struct Candidate {
  config::StrategyInput strategy;
  std::map<std::string, std::string> chosen;
  /// Memory-saving level: recomputation none 0, selective 1, full 2. A
  /// search tries lower levels first: recomputation never makes a step faster.
  int level = 0;
};

/// The fields candidates() can choose (StrategyInput field names).
const std::vector<std::string>& choosable_fields();

/// Every combination of values for the `free` fields on top of `base`:
/// micro_batch_size (powers of two up to 16 that divide the per-replica
/// batch), schedule and vpp (1F1B, or interleaving with v model chunks, v
/// dividing the layers per stage, up to 8; no pipeline: 1F1B), recompute
/// (none, selective, full), sequence_parallel (with TP: on, off), zero (0, 1).
/// Throws ConfigError naming a free field it cannot choose.
std::vector<Candidate> candidates(const model::ModelSpec& m, const config::StrategyInput& base,
                                  const std::vector<std::string>& free);

struct Evaluated {
  Candidate candidate;
  strategy::ParallelConfig parallel;
  report::StepResult result;
};

struct SearchResult {
  std::optional<Evaluated> best;  // fastest that fits; when none fits, the one with the least memory
  bool fits = false;
  std::size_t simulated = 0;      // candidates simulated
  std::size_t invalid = 0;        // candidates the strategy checks refused
  std::string first_refusal;      // why, for the first refused one
};

/// Called after each simulated candidate: (done, total).
using Progress = std::function<void(std::size_t, std::size_t)>;

/// Simulates candidates level by level (lowest first) and stops at the first
/// level where one fits: the fastest of those wins (ties: the earlier one).
SearchResult fastest_fitting(const model::ModelSpec& m, const hardware::HardwareProfile& hw,
                             const std::vector<Candidate>& candidates, const Progress& progress = {});

}  // namespace ptsim::plan

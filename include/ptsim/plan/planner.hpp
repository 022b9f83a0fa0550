// The strategy planner: every valid way to run a model on N GPUs — tp, cp,
// pp, dp, ep, interleaving, micro-batch size, schedule, recomputation,
// sequence parallelism, ZeRO — ranked by simulated step time (or cost).
//
// Cheap bounds come first: a candidate whose static memory plus the
// activations its schedule must hold exceeds the GPU is never simulated,
// and candidates are simulated in order of a lower bound on their step time
// (their busiest stage's kernels, plus the pipeline fill they cannot avoid)
// until the bound exceeds the K-th best time found — branch and bound, so
// the ranking is the one exhaustive simulation would give. Simulations run
// on a thread pool; the result does not depend on the thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ptsim/config/resolve_run.hpp"
#include "ptsim/config/strategy_input.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/report/step_result.hpp"
#include "ptsim/strategy/parallel_config.hpp"

namespace ptsim::plan {

enum class Objective { Time, Cost };

/// A part of a search: candidates whose index i (in enumeration order) has
/// i mod count == index.
struct Shard {
  std::int64_t index = 0;
  std::int64_t count = 1;
};

struct PlanRequest {
  model::ModelSpec model;
  hardware::HardwareProfile hardware;
  std::int64_t gpus = 1;
  std::int64_t global_batch_size = 1;
  std::optional<std::int64_t> seq_length;
  /// Fixed choices the search respects (e.g. precision fp8); unset fields are searched.
  config::StrategyInput fixed;
  std::size_t top = 10;
  Objective objective = Objective::Time;
  double price_per_gpu_hour = 0;  // for Objective::Cost (ranking is the same at a fixed GPU count)
  unsigned threads = 0;           // 0: every core
  Shard shard;
  /// Pipeline schedules searched; empty: the framework's, megatron_schedules().
  /// A schedule fixed in `fixed` is searched whatever this says.
  std::vector<std::string> schedules;
};

/// The pipeline schedules Megatron-LM can run: 1F1B and interleaved 1F1B
/// (megatron/core/pipeline_parallel/schedules.py, get_forward_backward_func,
/// at NVIDIA/Megatron-LM d98e8a6 of 2026-08-22: no pipelining, 1F1B without
/// interleaving, or with it; no GPipe, zero-bubble or DualPipe schedule).
const std::vector<std::string>& megatron_schedules();

/// The schedules `r` searches: its own list, else megatron_schedules().
const std::vector<std::string>& searched_schedules(const PlanRequest& r);

struct PlannedStrategy {
  config::StrategyInput strategy;  // every searched field set
  std::string label;               // "tp=8 pp=8 dp=16 mbs=1 1f1b recompute=none sp zero=1"
  std::size_t index = 0;           // in enumeration order (ties break on it)
  double lower_bound_s = 0;
  strategy::ParallelConfig parallel;
  report::StepResult result;
  double cost = 0;                 // step time · GPUs · price per GPU-hour / 3600
};

struct PlanResult {
  std::vector<PlannedStrategy> best;     // best first, at most `top`, all fitting in memory
  std::size_t searched = 0;        // strategies enumerated (this shard's)
  std::size_t invalid = 0;         // refused by the strategy checks
  std::size_t pruned_memory = 0;   // cannot fit: static memory plus unavoidable activations
  std::size_t pruned_bound = 0;    // lower bound above the K-th best time
  std::size_t simulated = 0;
  std::size_t did_not_fit = 0;     // simulated, but over the memory
  // Wall-clock seconds of the search; outputs keep it only with --timing.
  std::optional<double> wall_s;
};

/// Where a search stands, as simulations finish.
struct SearchProgress {
  std::size_t simulated = 0;     // candidates simulated so far
  /// Candidates not yet decided whose lower bound can still beat the K-th
  /// best found (in flight included): what is left at most. It only falls.
  std::size_t at_most_left = 0;
  double elapsed_s = 0;
  std::optional<double> best_step_s;  // the fastest fitting step so far, if any
};
using Progress = std::function<void(const SearchProgress&)>;

/// The search space for a request, in enumeration order (the shard's part).
std::vector<config::StrategyInput> enumerate(const PlanRequest& request);

/// "tp=8 pp=8 ..." for a strategy.
std::string describe(const config::StrategyInput& s);

/// What a search knows of its candidates before it reads the hardware's
/// rates: the enumeration (which reads only the NVLink domain's size) and
/// each candidate's resolution (which reads no hardware). Requests that
/// differ only in the hardware, with domains of one size, share one: ptsim
/// sweep and report build it once per GPU count and domain size.
struct CandidateSpace {
  std::int64_t gpus = 0, domain_gpus = 0, global_batch_size = 0;
  std::optional<std::int64_t> seq_length;
  Shard shard;
  std::vector<config::StrategyInput> strategies;         // enumerate(request)
  std::vector<std::optional<config::ResolvedRun>> runs;  // each resolved; empty where the checks refuse it
};

/// The candidate space of `request` (ConfigError for a shard that does not exist).
CandidateSpace candidate_space(const PlanRequest& request);

PlanResult plan(const PlanRequest& request, const Progress& progress = {});

/// The same search over `space`, built for a request with the same model,
/// fixed choices, batch, GPU count, domain size and shard (std::logic_error
/// where what it records differs): the result equals plan(request).
PlanResult plan(const PlanRequest& request, const CandidateSpace& space, const Progress& progress = {});

/// Merges shard results: the best `top` of their union, in the order an
/// unsharded search gives.
PlanResult merge(const std::vector<PlanResult>& shards, std::size_t top);

}  // namespace ptsim::plan

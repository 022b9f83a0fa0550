// Candidate strategies and the search for the fastest that fits (see search.hpp).
#include "ptsim/plan/search.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "internal/interleaving.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "ptsim/simulate/simulate_step.hpp"
#include "ptsim/strategy/schedule.hpp"

namespace ptsim::plan {

namespace {

// One free field's alternatives: each edits a strategy and names what it
// chose (and, where it sets a second field with it, that one too).
struct Option {
  std::function<void(config::StrategyInput&)> apply;
  std::string field, value;
  int level = 0;
  std::string extra_field = {}, extra_value = {};
};

// Full recomputation of only the first N layers of each model chunk
// (Megatron's --recompute-method block --recompute-num-layers N) is how a
// practitioner fits a step that does not fit without recomputation while
// recomputing as little as possible: N from 1 to one less than a stage's
// layers (resolve_run refuses an N beyond a chunk's layers; at a chunk's
// layers it is full recomputation), at most this many values, spread evenly.
constexpr std::int64_t kMaxPartialRecomputeOptions = 16;

std::vector<std::int64_t> partial_recompute_layers(const model::ModelSpec& m, const config::StrategyInput& s) {
  const std::int64_t pp = std::max<std::int64_t>(1, s.pp.value_or(1));
  const std::int64_t most = (m.num_layers + pp - 1) / pp - 1;  // below a stage's layers
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < std::min(most, kMaxPartialRecomputeOptions); ++i) {
    const std::int64_t n = most <= kMaxPartialRecomputeOptions ? i + 1 : 1 + i * (most - 1) / (kMaxPartialRecomputeOptions - 1);
    if (out.empty() || out.back() != n) out.push_back(n);
  }
  return out;
}

std::vector<Option> recompute_options(const model::ModelSpec& m, const config::StrategyInput& s) {
  // --recompute-modules says what selective reruns; the other levels drop it.
  std::vector<Option> out = {{[](config::StrategyInput& x) {
                                x.recompute = "none";
                                x.recompute_modules.reset();
                              },
                              "recompute", "none", 0},
                             {[](config::StrategyInput& x) { x.recompute = "selective"; }, "recompute", "selective", 1},
                             {[](config::StrategyInput& x) {
                                x.recompute = "full";
                                x.recompute_modules.reset();
                              },
                              "recompute", "full", 2}};
  if (!s.recompute_num_layers)
    for (const std::int64_t n : partial_recompute_layers(m, s))
      out.push_back({[n](config::StrategyInput& x) {
                       x.recompute = "full";
                       x.recompute_num_layers = n;
                       x.recompute_modules.reset();
                     },
                     "recompute", "full", 2, "recompute_num_layers", std::to_string(n)});
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Ranks of one pipeline replica's data-parallel group, as resolve_run derives it.
std::int64_t data_parallel(const config::StrategyInput& s) {
  if (s.dp) return *s.dp;
  const std::int64_t model_parallel = s.tp.value_or(1) * s.cp.value_or(1) * s.pp.value_or(1);
  return std::max<std::int64_t>(1, s.gpus.value_or(1) / model_parallel);
}

std::vector<Option> micro_batch_options(const config::StrategyInput& s) {
  std::vector<Option> out;
  const std::int64_t per_replica = s.global_batch_size.value_or(1) / data_parallel(s);
  for (std::int64_t b = 1; b <= 16 && b <= per_replica; b *= 2)
    if (per_replica % b == 0)
      out.push_back({[b](config::StrategyInput& x) { x.micro_batch_size = b; }, "micro_batch_size",
                     std::to_string(b), 0});
  if (out.empty()) out.push_back({[](config::StrategyInput& x) { x.micro_batch_size = 1; }, "micro_batch_size", "1", 0});
  return out;
}

// Pipeline schedule and model chunks: 1F1B, or interleaving at the depths
// internal::interleaving_depths offers (Megatron's equal chunks when pp
// divides the layers; with uneven stages, Llama 3 405B's 126 layers over 16,
// up to 8 chunks: with v = 2 the first and last virtual stages hold 3 layers,
// the rest 4).
std::vector<Option> schedule_options(const model::ModelSpec& m, const config::StrategyInput& s, bool schedule_free,
                                     bool vpp_free) {
  const std::int64_t pp = s.pp.value_or(1);
  const std::string one_f_one_b(strategy::to_string(strategy::ScheduleKind::OneFOneB));
  const std::string interleaved(strategy::to_string(strategy::ScheduleKind::Interleaved));
  const bool interleaved_asked = s.schedule && *s.schedule == interleaved;
  std::vector<Option> out;
  if (pp == 1) {
    // No pipeline: nothing to interleave.
    if (schedule_free || interleaved_asked)
      out.push_back({[one_f_one_b](config::StrategyInput& x) {
                       x.schedule = one_f_one_b;
                       x.vpp.reset();
                     },
                     "schedule", one_f_one_b + " (no pipeline)", 0});
    return out;
  }
  if (schedule_free)
    out.push_back({[one_f_one_b](config::StrategyInput& x) {
                     x.schedule = one_f_one_b;
                     x.vpp.reset();
                   },
                   "schedule", one_f_one_b, 0});
  if (schedule_free || (interleaved_asked && vpp_free)) {
    for (const std::int64_t v : internal::interleaving_depths(m.num_layers, pp))
      out.push_back({[v, interleaved](config::StrategyInput& x) {
                       x.schedule = interleaved;
                       x.vpp = v;
                     },
                     "vpp", std::to_string(v), 0});
    if (out.empty() && interleaved_asked)  // no v gives equal chunks or a layer per virtual stage
      out.push_back({[one_f_one_b](config::StrategyInput& x) {
                       x.schedule = one_f_one_b;
                       x.vpp.reset();
                     },
                     "schedule", one_f_one_b + " (layers per stage do not split into chunks)", 0});
  }
  return out;
}

}  // namespace

const std::vector<std::string>& choosable_fields() {
  static const std::vector<std::string> fields = {"micro_batch_size", "schedule", "vpp", "recompute",
                                                  "sequence_parallel", "zero"};
  return fields;
}

std::vector<Candidate> candidates(const model::ModelSpec& m, const config::StrategyInput& base,
                                  const std::vector<std::string>& free) {
  for (const auto& f : free)
    if (!has(choosable_fields(), f))
      throw ConfigError(fmt::format("{} is not published and ptsim does not choose it; give its value "
                                    "(ptsim chooses {})",
                                    f, fmt::join(choosable_fields(), ", ")));
  std::vector<std::vector<Option>> axes;
  if (has(free, "micro_batch_size")) axes.push_back(micro_batch_options(base));
  if (auto s = schedule_options(m, base, has(free, "schedule"), has(free, "vpp")); !s.empty())
    axes.push_back(std::move(s));
  if (has(free, "recompute")) axes.push_back(recompute_options(m, base));
  if (has(free, "sequence_parallel") && base.tp.value_or(1) > 1)
    axes.push_back({{[](config::StrategyInput& x) { x.sequence_parallel = true; }, "sequence_parallel", "true", 0},
                    {[](config::StrategyInput& x) { x.sequence_parallel = false; }, "sequence_parallel", "false", 0}});
  if (has(free, "zero"))
    axes.push_back({{[](config::StrategyInput& x) { x.zero = 0; }, "zero", "0", 0},
                    {[](config::StrategyInput& x) { x.zero = 1; }, "zero", "1", 0}});

  std::vector<Candidate> out{Candidate{base, {}, 0}};
  for (const auto& axis : axes) {
    std::vector<Candidate> next;
    for (const auto& c : out)
      for (const auto& o : axis) {
        Candidate n = c;
        o.apply(n.strategy);
        n.chosen[o.field] = o.value;
        if (!o.extra_field.empty()) n.chosen[o.extra_field] = o.extra_value;
        n.level = std::max(n.level, o.level);
        next.push_back(std::move(n));
      }
    out = std::move(next);
  }
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) { return a.level < b.level; });
  return out;
}

namespace {

// When nothing fits: the candidate that needs the least memory, and of those
// that need the same (an interleaving depth whose warm-up the micro-batches
// cap, say), the fastest, as among those that fit.
bool needs_less(const Evaluated& e, const std::optional<Evaluated>& least) {
  if (!least) return true;
  const auto& a = e.result;
  const auto& b = least->result;
  return a.memory.peak_bytes < b.memory.peak_bytes ||
         (a.memory.peak_bytes == b.memory.peak_bytes && a.step_time_s < b.step_time_s);
}

}  // namespace

SearchResult fastest_fitting(const model::ModelSpec& m, const hardware::HardwareProfile& hw,
                             const std::vector<Candidate>& candidates, const Progress& progress) {
  SearchResult r;
  std::optional<Evaluated> least_memory;
  std::size_t done = 0;
  for (std::size_t i = 0; i < candidates.size();) {
    const int level = candidates[i].level;
    std::optional<Evaluated> best_here;
    for (; i < candidates.size() && candidates[i].level == level; ++i) {
      const Candidate& c = candidates[i];
      config::ResolvedRun run;
      try {
        run = config::resolve_run(m, c.strategy);
      } catch (const ConfigError& e) {
        if (r.invalid++ == 0) r.first_refusal = e.what();
        if (progress) progress(++done, candidates.size());
        continue;
      }
      simulate::Request request{run.model, hw, run.parallel, simulate::Mode::Auto, {}, {}};
      const simulate::Outcome outcome = simulate::simulate_step(request);
      ++r.simulated;
      if (progress) progress(++done, candidates.size());
      Evaluated e{c, run.parallel, outcome.result};
      if (e.result.memory.fits) {
        if (!best_here || e.result.step_time_s < best_here->result.step_time_s) best_here = std::move(e);
      } else if (needs_less(e, least_memory)) {
        least_memory = std::move(e);
      }
    }
    if (best_here) {
      r.best = std::move(best_here);
      r.fits = true;
      return r;
    }
  }
  r.best = std::move(least_memory);
  return r;
}

}  // namespace ptsim::plan

// The best strategy at one (hardware, GPU count) point, as ptsim report and
// ptsim sweep search for it, with the search's progress on standard error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ptsim/config/strategy_input.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/plan/planner.hpp"

namespace ptsim::cli {

/// The best strategy for one (hardware, GPU count), or why there is none.
struct Point {
  std::string hardware_name, gpu;
  std::int64_t gpus = 0;
  std::optional<plan::PlannedStrategy> best;
  std::string reason;
  std::size_t searched = 0, simulated = 0;
};

/// The candidate spaces of one command's points (one model, batch,
/// sequence length and set of fixed choices), by GPU count and NVLink
/// domain size: the hardware variants of a sweep or a report share them.
/// A space is kept from its first point to its last, and only while the
/// spaces kept hold at most kKeptCandidates candidates (about 2 KiB each):
/// beyond that a point builds its own, so a sweep's memory stays bounded.
class SharedSpaces {
 public:
  static constexpr std::size_t kKeptCandidates = 200'000;

  /// The points to come, in order, as (GPUs, NVLink domain size).
  explicit SharedSpaces(const std::vector<std::pair<std::int64_t, std::int64_t>>& points);
  /// The space of the next point, `request`'s.
  std::shared_ptr<const plan::CandidateSpace> take(const plan::PlanRequest& request);

 private:
  struct Kept {
    std::size_t uses_left = 0;
    std::shared_ptr<const plan::CandidateSpace> space;
  };
  std::map<std::pair<std::int64_t, std::int64_t>, Kept> kept_;
  std::size_t kept_candidates_ = 0;
};

Point plan_point(const model::ModelSpec& model, const hardware::HardwareProfile& hw, std::int64_t gpus,
                 std::int64_t batch, std::optional<std::int64_t> seq, const config::StrategyInput& fixed,
                 unsigned threads, bool quiet, SharedSpaces& spaces);

/// The keys ptsim report's and ptsim sweep's rows share, in their order:
/// the best strategy and its step (label, strategy, step_time_s, mfu,
/// tokens_per_s) appended to `row`. Each command adds its own keys after.
void append_best_step(nlohmann::ordered_json& row, const plan::PlannedStrategy& best);

/// The search's counts (searched, simulated), the last keys of a row that fits.
void append_search_counts(nlohmann::ordered_json& row, const Point& p);

/// The non-empty items of a `sep`-separated list.
std::vector<std::string> split_list(const std::string& text, char sep);

}  // namespace ptsim::cli

// One planned point for report and sweep (see plan_point.hpp).
#include "plan_point.hpp"

#include <fmt/format.h>

#include <sstream>

#include "plan_output.hpp"
#include "search_progress.hpp"

namespace ptsim::cli {

SharedSpaces::SharedSpaces(const std::vector<std::pair<std::int64_t, std::int64_t>>& points) {
  for (const auto& p : points) ++kept_[p].uses_left;
}

std::shared_ptr<const plan::CandidateSpace> SharedSpaces::take(const plan::PlanRequest& request) {
  const auto it = kept_.find({request.gpus, request.hardware.nvlink.domain_gpus});
  if (it == kept_.end() || it->second.uses_left == 0)  // not announced: a space of its own
    return std::make_shared<const plan::CandidateSpace>(plan::candidate_space(request));
  Kept& k = it->second;
  std::shared_ptr<const plan::CandidateSpace> space = k.space;
  if (!space) space = std::make_shared<const plan::CandidateSpace>(plan::candidate_space(request));
  if (--k.uses_left == 0) {
    if (k.space) kept_candidates_ -= k.space->strategies.size();
    k.space.reset();  // its last point: the caller's pointer keeps it while it plans
  } else if (!k.space && kept_candidates_ + space->strategies.size() <= kKeptCandidates) {
    k.space = space;
    kept_candidates_ += space->strategies.size();
  }
  return space;
}

Point plan_point(const model::ModelSpec& model, const hardware::HardwareProfile& hw, std::int64_t gpus,
                 std::int64_t batch, std::optional<std::int64_t> seq, const config::StrategyInput& fixed,
                 unsigned threads, bool quiet, SharedSpaces& spaces) {
  Point p;
  p.hardware_name = hw.name;
  p.gpu = hw.gpu.name;
  p.gpus = gpus;
  plan::PlanRequest r;
  r.model = model;
  r.hardware = hw;
  r.gpus = gpus;
  r.global_batch_size = batch;
  r.seq_length = seq;
  r.fixed = fixed;
  r.top = 1;
  r.threads = threads;
  SearchProgressReporter progress(fmt::format("{} × {}", gpus, hw.name), !quiet);
  const plan::PlanResult result = plan::plan(r, *spaces.take(r), progress.callback());
  p.searched = result.searched;
  p.simulated = result.simulated;
  if (result.best.empty()) {
    p.reason = result.searched == 0 ? "no valid strategy for this GPU count and batch" : "no strategy fits in memory";
  } else {
    p.best = result.best.front();
  }
  return p;
}

void append_best_step(nlohmann::ordered_json& row, const plan::PlannedStrategy& best) {
  row["label"] = best.label;
  row["strategy"] = strategy_json(best.strategy);
  row["step_time_s"] = best.result.step_time_s;
  row["mfu"] = best.result.throughput.mfu;
  row["tokens_per_s"] = best.result.throughput.tokens_per_s;
}

void append_search_counts(nlohmann::ordered_json& row, const Point& p) {
  row["searched"] = p.searched;
  row["simulated"] = p.simulated;
}

std::vector<std::string> split_list(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace ptsim::cli

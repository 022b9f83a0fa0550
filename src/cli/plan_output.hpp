// Plan results as JSON (the format ptsim merge reads back), CSV and a table.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "ptsim/plan/planner.hpp"

namespace ptsim::cli {

/// The strategy fields that are set, under their JSON keys (as strategy files spell them).
nlohmann::ordered_json strategy_json(const config::StrategyInput& s);
nlohmann::ordered_json plan_json(const plan::PlanResult& result, const plan::PlanRequest& request);
std::string plan_csv(const nlohmann::ordered_json& plan);
std::string plan_table(const nlohmann::ordered_json& plan);
void print_plan(const plan::PlanResult& result, const plan::PlanRequest& request, std::ostream& out);

/// The best `top` (0: the shards' own) of several shard outputs, as one plan.
nlohmann::ordered_json merge_plan_files(const std::vector<std::string>& files, std::size_t top);
/// The same for shard outputs already parsed (gathered over MPI, say);
/// `sources[i]` names `plans[i]` in errors.
nlohmann::ordered_json merge_plan_files(const std::vector<nlohmann::ordered_json>& plans,
                                        const std::vector<std::string>& sources, std::size_t top);

}  // namespace ptsim::cli

// The machine-readable report of one step (schema_version 1). Later versions
// add keys and never rename them.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>

#include "ptsim/report/step_result.hpp"

namespace ptsim::report {

inline constexpr int kSchemaVersion = 1;

void write_json(const StepResult& result, std::ostream& out);

/// A breakdown as the reports write it (`breakdown_s`): its parts by name,
/// in seconds, summing to the step time.
nlohmann::ordered_json breakdown_json(const Breakdown& b);

}  // namespace ptsim::report

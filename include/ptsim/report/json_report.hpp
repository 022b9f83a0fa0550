// The machine-readable report of one step (schema_version 1). Later versions
// add keys and never rename them.
#pragma once

#include <ostream>

#include "ptsim/report/step_result.hpp"

namespace ptsim::report {

inline constexpr int kSchemaVersion = 1;

void write_json(const StepResult& result, std::ostream& out);

}  // namespace ptsim::report

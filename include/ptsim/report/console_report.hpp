// The terminal summary of one step, drawn with fmt.
#pragma once

#include <ostream>

#include "ptsim/report/step_result.hpp"

namespace ptsim::report {

void print_console(const StepResult& result, std::ostream& out);

}  // namespace ptsim::report

// The ptsim subcommands. Each takes its own arguments (after the command
// name), prints to the given streams and returns the process exit code; it
// throws ConfigError/SimulationError for main to report.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace ptsim::cli {

int run_simulate(const std::vector<std::string>& args, std::ostream& out);
int run_collective(const std::vector<std::string>& args, std::ostream& out);
int run_kernels(const std::vector<std::string>& args, std::ostream& out);
int run_calibrate(const std::vector<std::string>& args, std::ostream& out);
int run_check_kernels(const std::vector<std::string>& args, std::ostream& out);
int run_validate(const std::vector<std::string>& args, std::ostream& out);
int run_fit(const std::vector<std::string>& args, std::ostream& out);
int run_plan(const std::vector<std::string>& args, std::ostream& out);
int run_merge(const std::vector<std::string>& args, std::ostream& out);
int run_report(const std::vector<std::string>& args, std::ostream& out);
int run_sweep(const std::vector<std::string>& args, std::ostream& out);

}  // namespace ptsim::cli

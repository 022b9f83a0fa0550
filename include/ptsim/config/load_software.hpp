// What the framework of a published run's source ran beyond the fields of a
// run file (schema "ptsim-software/1", validation/software.json): strategy
// settings per family of run ids, each with the evidence for it, over the
// settings of the framework's stack file ("stack", load_stack.hpp).
#pragma once

#include <string>
#include <vector>

#include "ptsim/config/strategy_input.hpp"
#include "ptsim/config/input_files.hpp"

namespace ptsim::config {

struct SoftwareProfile {
  std::string runs;       // applies to runs whose id starts with this
  std::string framework;  // what ran, for people
  std::string stack;      // the stack file's name whose settings lie beneath these, or ""
  StrategyInput settings;  // the stack's, the source's own on top
  std::vector<std::string> evidence;
};

/// Reads a software file; throws ConfigError naming the file and the key.
std::vector<SoftwareProfile> load_software(const std::string& path, InputFiles& inputs);

/// The profile for a run id (the longest matching prefix), or nullptr.
const SoftwareProfile* software_for(const std::vector<SoftwareProfile>& profiles, const std::string& run_id);

}  // namespace ptsim::config

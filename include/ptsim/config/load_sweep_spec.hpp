// A sweep specification (ptsim sweep SPEC.json, docs/formats.md): a model, a
// batch, GPU counts, and hardware entries, each a profile with what-if
// overrides by JSON pointer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/config/input_files.hpp"

namespace ptsim::config {

struct SweepHardware {
  std::string name;                   // the entry's name, else the profile's
  hardware::HardwareProfile profile;  // overrides applied; their sources name the sweep
};

struct SweepSpec {
  std::string model_path;  // relative paths resolved against the spec's folder first
  std::int64_t global_batch_size = 0;
  std::optional<std::int64_t> seq_length;
  std::vector<std::int64_t> gpus;
  std::vector<SweepHardware> hardware;
};

/// Reads SPEC.json; throws ConfigError naming the file, the key and the fix.
SweepSpec load_sweep_spec(const std::string& path, InputFiles& inputs);

}  // namespace ptsim::config

// Hardware profile files (schema "ptsim-hw/1") → HardwareProfile. Strict:
// unknown keys are errors, every figure is converted once to SI units here,
// and every numeric figure must name its source in the profile's "sources".
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/config/input_files.hpp"

namespace ptsim::config {

hardware::HardwareProfile load_hardware(const std::string& path, InputFiles& inputs);

hardware::HardwareProfile parse_hardware(const nlohmann::json& object, const std::string& where);

/// A figure `ptsim fit` writes into a profile: where, what, and its source.
struct FittedFigure {
  std::string pointer;  // JSON pointer, e.g. "/gpu/sustained/tensor/bf16"
  double value = 0;
  std::string source;
};

/// The profile file at `profile_path` with `figures` set (objects created as
/// needed), their sources replaced and its "fit" object set to `record`, as
/// JSON text; throws ConfigError when the result is not a valid profile.
std::string fitted_profile_json(const std::string& profile_path, InputFiles& inputs,
                                const std::vector<FittedFigure>& figures, const hardware::FitRecord& record);

}  // namespace ptsim::config

// Hardware profile files (schema "ptsim-hw/1") → HardwareProfile. Strict:
// unknown keys are errors, every figure is converted once to SI units here,
// and every numeric figure must name its source in the profile's "sources".
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "ptsim/hardware/hardware_profile.hpp"

namespace ptsim::config {

hardware::HardwareProfile load_hardware(const std::string& path);

hardware::HardwareProfile parse_hardware(const nlohmann::json& object, const std::string& where);

}  // namespace ptsim::config

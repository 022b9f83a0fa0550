// The "calibration" object of a hardware profile ↔ hardware::Calibration.
// Private to config/ (the calibrate stage writes it through config's public
// save function).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ptsim/hardware/hardware_profile.hpp"

namespace ptsim::config::internal {

hardware::Calibration parse_calibration(const nlohmann::json& object, const std::string& where);
nlohmann::ordered_json calibration_to_json(const hardware::Calibration& c);

}  // namespace ptsim::config::internal

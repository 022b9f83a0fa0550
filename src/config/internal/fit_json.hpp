// The "fit" object of a hardware profile ↔ hardware::FitRecord. Private to
// config/ (the fit stage writes it through config's public save function).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ptsim/hardware/hardware_profile.hpp"

namespace ptsim::config::internal {

hardware::FitRecord parse_fit(const nlohmann::json& object, const std::string& where);
nlohmann::ordered_json fit_to_json(const hardware::FitRecord& f);

}  // namespace ptsim::config::internal

// Hugging Face config.json → ModelSpec. Private to config/.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ptsim/model/model_spec.hpp"

namespace ptsim::config::internal {

/// True when the object looks like a Hugging Face config (has "model_type" or "architectures").
bool is_hf_config(const nlohmann::json& object);

model::ModelSpec parse_hf_config(const nlohmann::json& object, const std::string& where,
                                 const std::string& fallback_name);

}  // namespace ptsim::config::internal

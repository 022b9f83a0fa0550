// Model files → ModelSpec. Two formats, told apart by their keys: ptsim's own
// object with Megatron-LM names (strict: unknown keys are errors), and a
// Hugging Face config.json as published (Llama, Mistral, Mixtral, Qwen2, Phi-3,
// Qwen3, Qwen3-MoE, DeepSeek-V3, gpt-oss, GPT-2, GPT-NeoX, BERT), of which
// only the keys that shape training are read.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "ptsim/model/model_spec.hpp"
#include "ptsim/config/input_files.hpp"

namespace ptsim::config {

/// Reads and validates a model file. Throws ConfigError naming the file, the
/// key, the value and the fix.
model::ModelSpec load_model(const std::string& path, InputFiles& inputs);

/// Parses a model object already read from `where`; `fallback_name` names the
/// model when the object does not.
model::ModelSpec parse_model(const nlohmann::json& object, const std::string& where,
                             const std::string& fallback_name);

/// Checks the dimensions of a model against each other and against sane
/// bounds; `where` prefixes the messages.
void validate_model(const model::ModelSpec& m, const std::string& where);

}  // namespace ptsim::config

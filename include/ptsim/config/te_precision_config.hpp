// Megatron-LM's --te-precision-config-file: a YAML quantization recipe whose
// ordered glob matchers give modules, by their names in the model, a
// Transformer Engine recipe of their own (megatron/core/quantization/
// quant_config.py and extensions/transformer_engine.py TEQuantizationParams,
// TransformerEngineMixedPrecision.md at d98e8a64dd; Megatron-Bridge's
// perf_recipes/nemotronh/te_quant.cfg at 067f987df). ptsim reads it into its
// own module formats (StrategyInput::module_precision), refusing by name
// what those cannot say.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ptsim/common/dtype.hpp"
#include "ptsim/model/model_spec.hpp"

namespace ptsim::config {

/// One entry of the file's `configs`: the format its training recipe runs
/// in (nullopt: high precision, bf16) and which modules it may change.
struct TeQuantConfig {
  std::string name;
  std::optional<Dtype> format;         // Mxfp8, Fp8 (tensorwise, blockwise), Nvfp4; nullopt: bf16
  std::string recipe;                  // the file's recipe name ("mxfp8", "tensorwise", ...), "" for bf16
  bool override_quantized = true;      // TEQuantizationRecipe.override_quantized_autocast
  bool override_nonquantized = false;  // TEQuantizationRecipe.override_nonquantized_autocast
};

/// One enabled matcher of the file's ordered `matchers`.
struct TeQuantMatcher {
  std::string name;
  std::string pattern;  // fnmatch-style glob over the module's name
  std::string config;   // a key of configs
};

struct TeQuantRecipe {
  std::string path;
  std::vector<TeQuantConfig> configs;
  std::vector<TeQuantMatcher> matchers;  // enabled ones, in the file's order
};

/// Reads the file: ConfigError naming the file, the key and what was
/// expected for anything Megatron-Core would refuse or ptsim cannot price
/// (custom or delayed recipes, per-module quantized parameters, matcher
/// types other than glob).
TeQuantRecipe load_te_precision_config(const std::string& path);

/// The run as the recipe meets it: its linear layers' format (Bf16 when not
/// quantized), the FP8 recipe's name under fp8 ("mxfp8", "tensorwise",
/// "blockwise", "delayed"), and which decoder layers run in bf16
/// (first_last_layers_bf16).
struct TeQuantRun {
  Dtype format = Dtype::Bf16;
  std::string fp8_recipe;
  std::int64_t bf16_layers_at_start = 0;
  std::int64_t bf16_layers_at_end = 0;
};

/// The recipe as module_precision entries ("attention=bf16,mamba_out_proj=mxfp8"; "" when it changes
/// nothing). Each linear module of `model` is named as Megatron-Core names it
/// (decoder.layers.N.self_attention.linear_qkv, ….mixer.out_proj,
/// mtp.layers.D.eh_proj, …) and matched in every layer; a module takes its
/// first matcher's config where that config overrides its default (a
/// quantized module unless override_quantized_autocast is false; a bf16 one
/// only with override_nonquantized_autocast). Refused by name: a module
/// module_precision cannot give a format of its own (the MLPs, the experts,
/// Mamba's in_proj, multi-latent attention's projections) given one, the
/// parts of one ptsim module (attention's QKV and output projections, the
/// two latent projections, the MTP depths' modules) given different
/// formats, layers of one module given different formats, and formats
/// module_precision does not run (bf16, or MXFP8 inside NVFP4 training).
std::string module_precision_of(const TeQuantRecipe& recipe, const model::ModelSpec& model, const TeQuantRun& run);

}  // namespace ptsim::config

// Megatron-LM's --te-precision-config-file read into module_precision (see
// ptsim/config/te_precision_config.hpp).
#include "ptsim/config/te_precision_config.hpp"

#include <fmt/format.h>
#include <fnmatch.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string_view>

#include "ptsim/common/error.hpp"
#include "ptsim/strategy/parallel_config.hpp"

namespace ptsim::config {

namespace {

using strategy::LinearModule;

// TEQuantizationRecipe's fields (extensions/transformer_engine.py at
// d98e8a64dd); Megatron-Core refuses any other key.
constexpr std::array<std::string_view, 9> kRecipeKeys = {"fp8_quantization_recipe",
                                                         "fp4_quantization_recipe",
                                                         "custom_recipe_factory",
                                                         "fp8_format",
                                                         "override_quantized_autocast",
                                                         "override_nonquantized_autocast",
                                                         "tp_only_amax_red",
                                                         "fp8_param",
                                                         "fp4_param"};

std::string where(const std::string& path, const std::string& key) { return fmt::format("{}: {}", path, key); }

bool boolean(const YAML::Node& n, const std::string& path, const std::string& key) {
  try {
    return n.as<bool>();
  } catch (const YAML::Exception&) {
    throw ConfigError(fmt::format("{} is '{}'; expected true or false", where(path, key), n.Scalar()));
  }
}

std::string text(const YAML::Node& n, const std::string& path, const std::string& key) {
  if (!n.IsScalar()) throw ConfigError(fmt::format("{} is not a string", where(path, key)));
  return n.Scalar();
}

// The training recipe of configs.<name>: its format and override flags.
TeQuantConfig read_recipe(const std::string& name, const YAML::Node& recipe, const std::string& path) {
  const std::string at = fmt::format("configs.{}.training_recipe", name);
  TeQuantConfig c;
  c.name = name;
  if (!recipe.IsMap() && !recipe.IsNull())
    throw ConfigError(fmt::format("{} is not a mapping (write {{}} for high precision)", where(path, at)));
  for (const auto& kv : recipe) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(kRecipeKeys.begin(), kRecipeKeys.end(), key) == kRecipeKeys.end())
      throw ConfigError(fmt::format("{}.{} is not a field of Megatron-Core's TEQuantizationRecipe ({})",
                                    where(path, at), key, fmt::join(kRecipeKeys, ", ")));
  }
  const std::string key8 = at + ".fp8_quantization_recipe", key4 = at + ".fp4_quantization_recipe";
  const bool fp8 = recipe["fp8_quantization_recipe"].IsDefined(), fp4 = recipe["fp4_quantization_recipe"].IsDefined();
  if (fp8 && fp4)
    throw ConfigError(
        fmt::format("{}: fp8 and fp4 quantization settings are mutually exclusive (Megatron-Core "
                    "refuses both)",
                    where(path, at)));
  if (fp8) {
    c.recipe = text(recipe["fp8_quantization_recipe"], path, key8);
    if (c.recipe == "mxfp8") {
      c.format = Dtype::Mxfp8;
    } else if (c.recipe == "tensorwise" || c.recipe == "blockwise") {
      c.format = Dtype::Fp8;
    } else if (c.recipe == "delayed") {
      throw ConfigError(
          fmt::format("{} is delayed: Megatron-Core refuses delayed scaling in per-module recipes", where(path, key8)));
    } else {
      throw ConfigError(
          fmt::format("{} is '{}'; ptsim prices mxfp8, tensorwise and blockwise (a custom recipe's "
                      "kernels are unknown to it)",
                      where(path, key8), c.recipe));
    }
  }
  if (fp4) {
    c.recipe = text(recipe["fp4_quantization_recipe"], path, key4);
    if (c.recipe != "nvfp4")
      throw ConfigError(fmt::format("{} is '{}'; ptsim prices nvfp4 (a custom recipe's kernels are unknown to it)",
                                    where(path, key4), c.recipe));
    c.format = Dtype::Nvfp4;
  }
  for (const char* param : {"fp8_param", "fp4_param"})
    if (recipe[param].IsDefined() && boolean(recipe[param], path, at + "." + param))
      throw ConfigError(fmt::format("{}.{} is true: quantized parameters per module are not modelled; drop it",
                                    where(path, at), param));
  if (recipe["override_quantized_autocast"].IsDefined())
    c.override_quantized = boolean(recipe["override_quantized_autocast"], path, at + ".override_quantized_autocast");
  if (recipe["override_nonquantized_autocast"].IsDefined())
    c.override_nonquantized =
        boolean(recipe["override_nonquantized_autocast"], path, at + ".override_nonquantized_autocast");
  return c;
}

// A module as Megatron-Core names it, the ptsim module that covers it (none:
// module_precision cannot give it a format of its own), and whether the
// run quantizes it.
struct NamedModule {
  std::string name;
  std::optional<LinearModule> module;
  bool quantized = false;
  bool bf16_layer = false;  // a decoder layer first_last_layers_bf16 keeps in bf16
};

// The linear modules of one layer kind, by name below the layer.
void layer_modules(const model::ModelSpec& m, std::int64_t kind, const std::string& prefix, bool quantized,
                   bool bf16_layer, std::optional<LinearModule> all_of, std::vector<NamedModule>& out) {
  const auto add = [&](const std::string& name, std::optional<LinearModule> module) {
    out.push_back({prefix + name, all_of ? all_of : module, quantized, bf16_layer});
  };
  if (m.is_mamba_layer(kind)) {
    add("mixer.in_proj", std::nullopt);
    add("mixer.out_proj", LinearModule::MambaOutProj);
  }
  if (m.has_attention(kind)) {
    if (m.multi_latent_attention) {
      for (const char* p : {"linear_kv_down_proj", "linear_kv_up_proj", "linear_proj"})
        add(fmt::format("self_attention.{}", p), std::nullopt);
      if (m.q_lora_rank > 0) {
        add("self_attention.linear_q_down_proj", std::nullopt);
        add("self_attention.linear_q_up_proj", std::nullopt);
      } else {
        add("self_attention.linear_q_proj", std::nullopt);
      }
    } else {
      add("self_attention.linear_qkv", LinearModule::Attention);
      add("self_attention.linear_proj", LinearModule::Attention);
    }
  }
  if (m.has_mlp(kind)) {
    if (m.is_moe_layer(kind)) {
      add("mlp.experts.linear_fc1", std::nullopt);
      add("mlp.experts.linear_fc2", std::nullopt);
      if (m.moe_shared_expert_intermediate_size > 0) {
        add("mlp.shared_experts.linear_fc1", std::nullopt);
        add("mlp.shared_experts.linear_fc2", std::nullopt);
      }
      if (m.moe_latent_size > 0) {
        add("mlp.fc1_latent_proj", LinearModule::LatentProjection);
        add("mlp.fc2_latent_proj", LinearModule::LatentProjection);
      }
    } else {
      add("mlp.linear_fc1", std::nullopt);
      add("mlp.linear_fc2", std::nullopt);
    }
  }
}

// Every linear module of the model by its name in Megatron-Core's modules
// (GPTModel and HybridModel's named_modules(): decoder.layers.N.…, and
// mtp.layers.D.eh_proj with the depth's layer under mtp_model_layer).
std::vector<NamedModule> model_modules(const model::ModelSpec& m, const TeQuantRun& run) {
  std::vector<NamedModule> out;
  const bool quantized = run.format != Dtype::Bf16;
  for (std::int64_t l = 0; l < m.num_layers; ++l) {
    const bool bf16 = strategy::ParallelConfig::first_last_bf16_layer(l, m.num_layers, run.bf16_layers_at_start,
                                                                      run.bf16_layers_at_end);
    layer_modules(m, l, fmt::format("decoder.layers.{}.", l), quantized && !bf16, quantized && bf16, std::nullopt, out);
  }
  // Megatron-Core runs the MTP depths in the FP8 context only.
  const bool mtp_quantized = quantized && run.format != Dtype::Nvfp4;
  const auto kinds = m.mtp_layer_kinds();
  for (std::int64_t d = 0; d < m.mtp_weight_sets(); ++d) {
    const std::string depth = fmt::format("mtp.layers.{}.", d);
    out.push_back({depth + "eh_proj", LinearModule::Mtp, mtp_quantized, false});
    for (std::size_t j = 0; j < kinds.size(); ++j)
      layer_modules(m, kinds[j],
                    m.is_hybrid() ? fmt::format("{}mtp_model_layer.layers.{}.", depth, j) : depth + "mtp_model_layer.",
                    mtp_quantized, false, LinearModule::Mtp, out);
  }
  return out;
}

std::string format_name(std::optional<Dtype> format, const std::string& recipe) {
  if (!format) return "bf16";
  if (*format == Dtype::Fp8) return "fp8 " + recipe;
  return std::string(to_string(*format));
}

// Calls `visit(name, node, at)` for each entry of the mapping `key` of the
// file (absent: none), each of which must be a mapping itself.
template <typename Visit>
void for_each_entry(const YAML::Node& root, const char* key, const std::string& path, Visit visit) {
  const YAML::Node entries = root[key];
  if (entries.IsDefined() && !entries.IsMap()) throw ConfigError(fmt::format("{} is not a mapping", where(path, key)));
  for (const auto& kv : entries) {
    const std::string name = kv.first.as<std::string>();
    const std::string at = fmt::format("{}.{}", key, name);
    if (!kv.second.IsMap()) throw ConfigError(fmt::format("{} is not a mapping", where(path, at)));
    visit(name, kv.second, at);
  }
}

TeQuantRecipe read_recipe_file(const YAML::Node& root, const std::string& path) {
  TeQuantRecipe r;
  r.path = path;
  for_each_entry(root, "configs", path, [&](const std::string& name, const YAML::Node& c, const std::string& at) {
    const YAML::Node type = c["transformer_engine_config_type"];
    if (!type.IsDefined() || text(type, path, at + ".transformer_engine_config_type") != "TEQuantizationParams")
      throw ConfigError(
          fmt::format("{}.transformer_engine_config_type must be TEQuantizationParams, the one type "
                      "Megatron-Core's Transformer Engine modules read",
                      where(path, at)));
    for (const auto& field : c) {
      const std::string key = field.first.as<std::string>();
      if (key != "transformer_engine_config_type" && key != "training_recipe" && key != "evaluation_recipe")
        throw ConfigError(
            fmt::format("{}.{} is not a key of TEQuantizationParams (transformer_engine_config_type, "
                        "training_recipe, evaluation_recipe)",
                        where(path, at), key));
    }
    if (!c["training_recipe"].IsDefined())
      throw ConfigError(fmt::format("{}.training_recipe is missing (Megatron-Core requires it)", where(path, at)));
    // The evaluation recipe runs when the model is not training: not a step's.
    r.configs.push_back(read_recipe(name, c["training_recipe"], path));
  });
  for_each_entry(root, "matchers", path, [&](const std::string& name, const YAML::Node& m, const std::string& at) {
    // Megatron-Core skips a matcher without `enabled: true`.
    if (!m["enabled"].IsDefined() || !boolean(m["enabled"], path, at + ".enabled")) return;
    for (const char* key : {"type", "pattern", "config"})
      if (!m[key].IsDefined()) throw ConfigError(fmt::format("{}.{} is missing", where(path, at), key));
    const std::string type = text(m["type"], path, at + ".type");
    if (type != "glob")
      throw ConfigError(
          fmt::format("{}.type is '{}'; Megatron-Core implements glob matchers only", where(path, at), type));
    TeQuantMatcher matcher{name, text(m["pattern"], path, at + ".pattern"), text(m["config"], path, at + ".config")};
    if (std::none_of(r.configs.begin(), r.configs.end(),
                     [&](const TeQuantConfig& c) { return c.name == matcher.config; }))
      throw ConfigError(
          fmt::format("{}.config is '{}', which configs does not define", where(path, at), matcher.config));
    r.matchers.push_back(std::move(matcher));
  });
  return r;
}

}  // namespace

TeQuantRecipe load_te_precision_config(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw ConfigError(fmt::format("{}: cannot be read (te_precision_config_file)", path));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: line {}: {}", path, e.mark.line + 1, e.msg));
  }
  if (!root.IsMap()) throw ConfigError(fmt::format("{}: expected a mapping with configs and matchers", path));
  try {
    return read_recipe_file(root, path);
  } catch (const YAML::Exception& e) {
    // A node of another type than the file's structure has there (a key
    // that is a list, say): yaml-cpp's own words, with the file.
    throw ConfigError(fmt::format("{}: {}", path, e.what()));
  }
}

std::string module_precision_of(const TeQuantRecipe& recipe, const model::ModelSpec& model, const TeQuantRun& run) {
  const auto config_of = [&](const std::string& name) -> const TeQuantConfig& {
    return *std::find_if(recipe.configs.begin(), recipe.configs.end(),
                         [&](const TeQuantConfig& c) { return c.name == name; });
  };
  const std::optional<Dtype> run_format = run.format == Dtype::Bf16 ? std::nullopt : std::optional<Dtype>(run.format);
  const std::string run_name = format_name(run_format, run.fp8_recipe);
  struct Seen {
    std::string format, fallback, module_name, matcher;
  };
  std::map<LinearModule, Seen> groups;
  for (const NamedModule& mod : model_modules(model, run)) {
    const std::string fallback = mod.quantized ? run_name : "bf16";
    std::string format = fallback, matcher = "no matcher";
    for (const TeQuantMatcher& m : recipe.matchers) {
      if (::fnmatch(m.pattern.c_str(), mod.name.c_str(), 0) != 0) continue;
      const TeQuantConfig& c = config_of(m.config);
      if (mod.quantized ? c.override_quantized : c.override_nonquantized) format = format_name(c.format, c.recipe);
      matcher = "matcher " + m.name;
      break;  // the first enabled matcher decides
    }
    if (!mod.module || mod.bf16_layer) {
      // A module module_precision does not cover, or in a layer ptsim keeps
      // in bf16 (first_last_layers_bf16): it must stay as it is.
      if (format != fallback)
        throw ConfigError(
            fmt::format("{}: {} gives {} the {} format where the run's is {}; ptsim gives formats of their own to "
                        "attention's "
                        "QKV and output projections, a latent MoE's projections, Mamba's out_proj and the MTP depths{}",
                        recipe.path, matcher, mod.name, format, fallback,
                        mod.module ? ", not to layers first_last_layers_bf16 keeps in bf16" : ""));
      continue;
    }
    const auto [it, first] = groups.try_emplace(*mod.module, Seen{format, fallback, mod.name, matcher});
    if (!first && it->second.format != format)
      throw ConfigError(
          fmt::format("{}: {} gives {} the {} format and {} gives {} the {}; ptsim runs them as one "
                      "module, in one format",
                      recipe.path, it->second.matcher, it->second.module_name, it->second.format, matcher, mod.name,
                      format));
  }
  std::vector<std::string> entries;
  for (const auto& [name_module, name] : strategy::kLinearModuleNames) {
    const auto it = groups.find(name_module);
    if (it == groups.end()) continue;
    const Seen& seen = it->second;
    if (seen.format == seen.fallback) continue;  // as it runs without the file
    const bool supported = seen.format == "bf16" || (seen.format == "mxfp8" && run.format == Dtype::Nvfp4);
    if (!supported)
      throw ConfigError(
          fmt::format("{}: {} gives {} the {} format inside {} training; ptsim runs a module in bf16, "
                      "or in MXFP8 inside NVFP4 training",
                      recipe.path, seen.matcher, seen.module_name, seen.format, run_name));
    entries.push_back(fmt::format("{}={}", name, seen.format));
  }
  return fmt::format("{}", fmt::join(entries, ","));
}

}  // namespace ptsim::config

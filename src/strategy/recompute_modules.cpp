// Names of Megatron-Core's recomputation modules (see recompute_modules.hpp).
#include "ptsim/strategy/recompute_modules.hpp"

#include <array>
#include <utility>

namespace ptsim::strategy {

namespace {

constexpr std::array<std::pair<std::string_view, RecomputeModule>, 7> kNames = {{
    {"core_attn", kRecomputeCoreAttn},
    {"moe_act", kRecomputeMoeAct},
    {"layernorm", kRecomputeLayernorm},
    {"mla_up_proj", kRecomputeMlaUpProj},
    {"mlp", kRecomputeMlp},
    {"moe", kRecomputeMoe},
    {"shared_experts", kRecomputeSharedExperts},
}};

std::string joined(RecomputeModules modules) {
  std::string out;
  for (const auto& [name, bit] : kNames) {
    if ((modules & bit) == 0) continue;
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace

RecomputeModule recompute_module_named(std::string_view name) {
  for (const auto& [n, bit] : kNames)
    if (n == name) return bit;
  return static_cast<RecomputeModule>(0);
}

std::string recompute_module_names() { return joined(static_cast<RecomputeModules>(~0u)); }

std::string to_string_modules(RecomputeModules modules) { return joined(modules); }

}  // namespace ptsim::strategy

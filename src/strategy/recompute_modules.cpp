// Names of Megatron-Core's recomputation modules (see recompute_modules.hpp).
#include "ptsim/strategy/recompute_modules.hpp"

#include <array>
#include <utility>

namespace ptsim::strategy {

namespace {

constexpr std::array<std::pair<std::string_view, RecomputeModule>, 8> kNames = {{
    {"core_attn", kRecomputeCoreAttn},
    {"moe_act", kRecomputeMoeAct},
    {"layernorm", kRecomputeLayernorm},
    {"mla_up_proj", kRecomputeMlaUpProj},
    {"mlp", kRecomputeMlp},
    {"moe", kRecomputeMoe},
    {"shared_experts", kRecomputeSharedExperts},
    {"mhc", kRecomputeMhc},
}};

}  // namespace

RecomputeModule recompute_module_named(std::string_view name) {
  for (const auto& [n, bit] : kNames)
    if (n == name) return bit;
  return static_cast<RecomputeModule>(0);
}

std::vector<std::string> names_of_modules(RecomputeModules modules) {
  std::vector<std::string> out;
  for (const auto& [name, bit] : kNames)
    if (modules & bit) out.emplace_back(name);
  return out;
}

std::string recompute_module_names() {
  std::string out;
  for (const std::string& name : names_of_modules(static_cast<RecomputeModules>(~0u)))
    out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace ptsim::strategy

// Software stack files (see load_stack.hpp).
#include "ptsim/config/load_stack.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string_view>

#include "internal/object_reader.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/strategy/schedule.hpp"

namespace ptsim::config {

namespace {

// What a run chooses, not what its framework does: a stack never sets them.
bool is_layout_key(std::string_view key) {
  static constexpr std::string_view kLayout[] = {"gpus",
                                                 "tp",
                                                 "pp",
                                                 "dp",
                                                 "cp",
                                                 "ep",
                                                 "expert_tp",
                                                 "vpp",
                                                 "layers_per_virtual_stage",
                                                 "first_stage_layers",
                                                 "last_stage_layers",
                                                 "pipeline_layout",
                                                 "micro_batch_size",
                                                 "global_batch_size",
                                                 "seq_length",
                                                 "schedule",
                                                 "rank_order",
                                                 "memory_headroom_gib"};
  return std::find(std::begin(kLayout), std::end(kLayout), key) != std::end(kLayout);
}

std::map<std::string, std::string> text_map(internal::ObjectReader& in, const nlohmann::json& root,
                                            const std::string& key, const std::string& path) {
  std::map<std::string, std::string> out;
  if (!root.contains(key)) return out;
  in.skip(key);
  const nlohmann::json& object = root.at(key);
  if (!object.is_object()) throw ConfigError(fmt::format("{}: /{} must be an object of texts", path, key));
  for (const auto& [name, text] : object.items()) {
    if (!text.is_string() || text.get<std::string>().empty())
      throw ConfigError(fmt::format("{}: /{}/{} must be a non-empty text", path, key, name));
    out[name] = text.get<std::string>();
  }
  return out;
}

SoftwareStack parse_stack(const nlohmann::json& document, const std::string& path) {
  internal::ObjectReader in(document, path);
  if (in.string("schema") != "ptsim-stack/1")
    in.fail("schema", "is not a stack schema ptsim reads; expected \"ptsim-stack/1\"");
  SoftwareStack s;
  s.name = in.string("name");
  s.framework = in.string("framework");
  if (!document.contains("settings")) in.fail("settings", "is missing: the strategy settings the framework fixes");
  in.skip("settings");
  const nlohmann::json& settings = document.at("settings");
  if (!settings.is_object()) throw ConfigError(fmt::format("{}: /settings must be an object", path));
  s.settings = parse_strategy(settings, path, "/settings");
  for (const auto& [field, where] : s.settings.origin)
    if (is_layout_key(field))
      throw ConfigError(
          fmt::format("{}: a stack holds what the framework does, not the run's layout, batch or "
                      "schedule; give it as a flag or in --strategy (a stack lists the schedules it "
                      "can run under \"schedules\")",
                      where));
  if (document.contains("schedules")) {
    const std::vector<std::string_view> names = strategy::schedule_names();
    for (const auto& name : in.array("schedules")) {
      if (!name.is_string() || std::find(names.begin(), names.end(), name.get<std::string>()) == names.end())
        throw ConfigError(fmt::format("{}: /schedules holds {}, not a schedule; use {}", path, internal::show(name),
                                      fmt::join(names, ", ")));
      s.schedules.push_back(name.get<std::string>());
    }
    if (s.schedules.empty()) in.fail("schedules", "is empty: list the schedules the framework can run, or drop it");
  }
  s.evidence = text_map(in, document, "evidence", path);
  s.not_modelled = text_map(in, document, "not_modelled", path);
  in.reject_unknown_keys("accepted keys: schema, name, framework, settings, schedules, evidence, not_modelled");
  // Every value with its evidence, and no evidence for a value not given.
  std::vector<std::string> given;
  for (const auto& [key, value] : settings.items()) given.push_back(key);
  if (!s.schedules.empty()) given.push_back("schedules");
  for (const auto& key : given)
    if (!s.evidence.contains(key))
      throw ConfigError(
          fmt::format("{}: /evidence has no entry for \"{}\": every setting of a stack names its "
                      "source (file and commit, measurement or paper)",
                      path, key));
  for (const auto& [key, text] : s.evidence)
    if (std::find(given.begin(), given.end(), key) == given.end())
      throw ConfigError(fmt::format("{}: /evidence/{} is evidence for a setting the stack does not give; settings: {}",
                                    path, key, fmt::join(given, ", ")));
  return s;
}

}  // namespace

SoftwareStack load_stack(const std::string& path, InputFiles& inputs) {
  return parse_stack(internal::read_json_file(path, inputs), path);
}

std::string fitted_stack_json(const std::string& path, InputFiles& inputs, const std::string& name,
                              double host_overhead_us, const std::string& evidence) {
  nlohmann::ordered_json out = internal::read_ordered_json_file(path, inputs);
  out["name"] = name;
  out["settings"]["host_overhead_us"] = host_overhead_us;
  out["evidence"]["host_overhead_us"] = evidence;
  parse_stack(nlohmann::json::parse(out.dump()), path + " (as fitted)");
  return out.dump(2) + "\n";
}

StrategyInput apply_stack(const SoftwareStack& stack, const StrategyInput& over) {
  StrategyInput base = stack.settings;
  base.origin.clear();
  for (const auto& f : strategy_fields())
    std::visit(
        [&](auto member) {
          if (base.*member) base.origin[f.field] = fmt::format("stack {}: {}", stack.name, f.key);
        },
        f.member);
  StrategyInput out = merge(base, over);
  if (out.schedule && !stack.schedules.empty() &&
      std::find(stack.schedules.begin(), stack.schedules.end(), *out.schedule) == stack.schedules.end())
    throw ConfigError(fmt::format("schedule {} ({}): stack {} cannot run it; it runs {}", *out.schedule,
                                  out.origin.contains("schedule") ? out.origin.at("schedule") : "given", stack.name,
                                  fmt::join(stack.schedules, ", ")));
  return out;
}

}  // namespace ptsim::config

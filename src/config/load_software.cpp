// Software profiles of published runs (see load_software.hpp).
#include "ptsim/config/load_software.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "internal/object_reader.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/load_stack.hpp"

namespace ptsim::config {

std::vector<SoftwareProfile> load_software(const std::string& path, InputFiles& inputs) {
  const nlohmann::json document = internal::read_json_file(path, inputs);
  internal::ObjectReader in(document, path);
  if (in.string("schema") != "ptsim-software/1")
    in.fail("schema", "is not a software schema ptsim reads; expected \"ptsim-software/1\"");
  in.skip("note");
  const nlohmann::json& sources = in.array("sources");
  in.reject_unknown_keys("accepted keys: schema, note, sources");
  std::vector<SoftwareProfile> out;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const std::string at = fmt::format("/sources/{}", i);
    if (!sources[i].is_object()) throw ConfigError(fmt::format("{}: {} must be an object", path, at));
    internal::ObjectReader s(sources[i], path, at);
    SoftwareProfile p;
    p.runs = s.string("runs");
    p.framework = s.string("framework");
    if (!sources[i].contains("settings")) s.fail("settings", "is missing: the strategy settings the framework ran");
    s.skip("settings");
    p.settings = parse_strategy(sources[i].at("settings"), path, at + "/settings");
    for (const auto& e : s.array("evidence")) {
      if (!e.is_string()) throw ConfigError(fmt::format("{}: {}/evidence holds a non-string", path, at));
      p.evidence.push_back(e.get<std::string>());
    }
    if (p.evidence.empty()) s.fail("evidence", "is empty: every setting needs its evidence");
    // The framework's own behaviour from its stack file (relative to this
    // file), the source's settings on top.
    if (const auto stack = s.optional_string("stack")) {
      const std::filesystem::path stack_path = std::filesystem::path(path).parent_path() / *stack;
      const SoftwareStack loaded = load_stack(stack_path.lexically_normal().string(), inputs);
      p.stack = loaded.name;
      p.settings = merge(loaded.settings, p.settings);
    }
    s.reject_unknown_keys("accepted keys: runs, framework, stack, settings, evidence");
    out.push_back(std::move(p));
  }
  return out;
}

const SoftwareProfile* software_for(const std::vector<SoftwareProfile>& profiles, const std::string& run_id) {
  const SoftwareProfile* best = nullptr;
  for (const auto& p : profiles)
    if (run_id.rfind(p.runs, 0) == 0 && (best == nullptr || p.runs.size() > best->runs.size())) best = &p;
  return best;
}

}  // namespace ptsim::config

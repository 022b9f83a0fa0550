// Sweep specifications (see load_sweep_spec.hpp).
#include "ptsim/config/load_sweep_spec.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "internal/object_reader.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/load_hardware.hpp"
#include "ptsim/hardware/power_limit.hpp"

namespace ptsim::config {

namespace {

constexpr std::int64_t kMaxGpus = 1 << 24;

// A path from the spec: against the spec's folder when a file is there,
// else as given (relative to the working directory).
std::string resolve(const std::filesystem::path& base, const std::string& p) {
  const auto candidate = base / p;
  return std::filesystem::exists(candidate) ? candidate.string() : p;
}

// The profile of hardware entry `at` with its overrides applied; each
// overridden figure's source becomes the sweep.
SweepHardware hardware_entry(const nlohmann::json& object, const std::string& spec_path, const std::string& at,
                             const std::filesystem::path& base, InputFiles& inputs) {
  internal::ObjectReader h(object, spec_path, at);
  const std::string profile_path = resolve(base, h.string("profile"));
  nlohmann::json profile = internal::read_json_file(profile_path, inputs);
  if (!profile.is_object()) throw ConfigError(fmt::format("{}: a hardware profile is a JSON object", profile_path));
  SweepHardware entry;
  entry.name = h.optional_string("name").value_or(profile.value("name", profile_path));
  if (h.has("overrides")) {
    h.object("overrides");  // an object of JSON pointers
    for (const auto& [pointer, value] : object.at("overrides").items()) {
      nlohmann::json::json_pointer ptr;
      try {
        ptr = nlohmann::json::json_pointer(pointer);
      } catch (const nlohmann::json::exception&) {
        throw ConfigError(fmt::format("{}: {}/overrides: '{}' is not a JSON pointer (e.g. /network/nic/bandwidth_GBps)",
                                      spec_path, at, pointer));
      }
      if (!profile.contains(ptr))
        throw ConfigError(fmt::format("{}: {}/overrides: {} is not a key of {}", spec_path, at, pointer, profile_path));
      profile[ptr] = value;
      if (profile.contains("sources") && profile["sources"].contains(pointer))
        profile["sources"][pointer] = fmt::format("what-if override from {}", spec_path);
    }
  }
  const std::optional<double> power_limit = h.optional_number("power_limit_W", 1.0, 1e5);
  h.reject_unknown_keys("accepted keys: name, profile, overrides, power_limit_W");
  profile["name"] = entry.name;
  entry.profile = parse_hardware(profile, fmt::format("{} ({}: {})", profile_path, spec_path, at));
  if (power_limit) {
    try {
      entry.profile = hardware::under_power_limit(std::move(entry.profile), *power_limit);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: {}/power_limit_W: {}", spec_path, at, e.what()));
    }
    entry.profile.name = entry.name;  // the sweep's name for it
  }
  return entry;
}

}  // namespace

SweepSpec load_sweep_spec(const std::string& path, InputFiles& inputs) {
  const nlohmann::json document = internal::read_json_file(path, inputs);
  if (!document.is_object())
    throw ConfigError(fmt::format("{}: a sweep specification is a JSON object; see ptsim sweep --help", path));
  internal::ObjectReader in(document, path);
  const std::filesystem::path base = std::filesystem::path(path).parent_path();
  SweepSpec spec;
  spec.model_path = resolve(base, in.string("model"));
  spec.global_batch_size = in.integer("global_batch_size", 1, std::int64_t{1} << 31);
  spec.seq_length = in.optional_integer("seq_length", 1, std::int64_t{1} << 24);
  const nlohmann::json& gpus = in.array("gpus");
  for (const auto& g : gpus) {
    if (!g.is_number_integer() || g.get<std::int64_t>() < 1 || g.get<std::int64_t>() > kMaxGpus)
      in.fail("gpus", fmt::format("holds {}; give GPU counts in [1, {}]", internal::show(g), kMaxGpus));
    spec.gpus.push_back(g.get<std::int64_t>());
  }
  if (spec.gpus.empty()) in.fail("gpus", "is empty; give the GPU counts to sweep");
  const nlohmann::json& hardware = in.array("hardware");
  in.reject_unknown_keys("accepted keys: model, global_batch_size, seq_length, gpus, hardware");
  if (hardware.empty()) in.fail("hardware", "is empty; give the hardware entries to sweep");
  for (std::size_t i = 0; i < hardware.size(); ++i) {
    const std::string at = fmt::format("/hardware/{}", i);
    if (!hardware[i].is_object())
      throw ConfigError(fmt::format("{}: {} must be an object with a profile (and name, overrides)", path, at));
    spec.hardware.push_back(hardware_entry(hardware[i], path, at, base, inputs));
  }
  return spec;
}

}  // namespace ptsim::config

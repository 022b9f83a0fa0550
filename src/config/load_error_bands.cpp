// Validated error bands per GPU (see load_error_bands.hpp).
#include "ptsim/config/load_error_bands.hpp"

#include <fmt/format.h>

#include "internal/object_reader.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::config {

std::map<std::string, ErrorBand> load_error_bands(const std::string& path, InputFiles& inputs) {
  const nlohmann::json document = internal::read_json_file(path, inputs);
  internal::ObjectReader in(document, path);
  if (in.string("schema") != "ptsim-error-bands/1")
    in.fail("schema", "is not an error-band schema ptsim reads; expected \"ptsim-error-bands/1\" "
                      "(scripts/error_bands.py writes it)");
  in.skip("note");
  in.object("gpus");  // checks it is an object
  in.reject_unknown_keys("accepted keys: schema, note, gpus");
  std::map<std::string, ErrorBand> out;
  for (const auto& [gpu, value] : document.at("gpus").items()) {
    const std::string at = "/gpus/" + gpu;
    if (!value.is_object()) throw ConfigError(fmt::format("{}: {} must be an object", path, at));
    internal::ObjectReader b(value, path, at);
    ErrorBand band;
    band.runs = b.integer("runs", 1, 1'000'000);
    band.median_abs_error_pct = b.number("median_abs_error_pct", 0, 1e4);
    band.min_error_pct = b.number("min_error_pct", -100, 1e4);
    band.max_error_pct = b.number("max_error_pct", -100, 1e4);
    if (band.min_error_pct > band.max_error_pct)
      b.fail("min_error_pct", fmt::format("= {} is above max_error_pct = {}", band.min_error_pct, band.max_error_pct));
    band.runs_predicted_short = b.integer("runs_predicted_short", 0, band.runs);
    for (const auto& p : b.array("profiles")) {
      if (!p.is_string()) throw ConfigError(fmt::format("{}: {}/profiles holds a non-string", path, at));
      band.profiles.push_back(p.get<std::string>());
    }
    b.skip("run_files");
    b.reject_unknown_keys("accepted keys: runs, median_abs_error_pct, min_error_pct, max_error_pct, "
                          "runs_predicted_short, profiles, run_files");
    out.emplace(gpu, std::move(band));
  }
  return out;
}

}  // namespace ptsim::config

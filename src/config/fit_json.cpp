// The fit record in JSON (see internal/fit_json.hpp).
//
//   "fit": {
//     "method": "step times",
//     "inputs": ["validation/published_runs.json"],
//     "points": ["megatron-readme-h100-gpt-1.7b", …],
//     "parameters": [ { "name": "sustained.tensor.bf16", "value": 0.81, "standard_error": 0.012,
//                       "pinned_by": ["…"], "at_bound": false } ],
//     "refused": [ { "name": "nic.efficiency", "why": "…" } ],
//     "error_pct": { "median_before": 21.4, "max_before": 30.1, "median_after": 4.0, "max_after": 9.0 }
//   }
#include "internal/fit_json.hpp"

#include <fmt/format.h>

#include "internal/object_reader.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::config::internal {

namespace {

std::vector<std::string> strings(ObjectReader& in, const std::string& key) {
  std::vector<std::string> out;
  const nlohmann::json& list = in.array(key);
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) in.fail(fmt::format("{}/{}", key, i), "must be a string");
    out.push_back(list[i].get<std::string>());
  }
  return out;
}

}  // namespace

hardware::FitRecord parse_fit(const nlohmann::json& object, const std::string& where) {
  ObjectReader in(object, where, "/fit");
  hardware::FitRecord f;
  f.method = in.choice("method", {"step times", "nccl-tests"});
  f.inputs = strings(in, "inputs");
  f.points = strings(in, "points");
  const nlohmann::json& params = in.array("parameters");
  for (std::size_t i = 0; i < params.size(); ++i) {
    ObjectReader p(params[i], where, fmt::format("/fit/parameters/{}", i));
    hardware::FittedParameter fp;
    fp.name = p.string("name");
    fp.value = p.number("value", -1e30, 1e30);
    fp.standard_error = p.optional_number("standard_error", 0, 1e30);
    fp.pinned_by = strings(p, "pinned_by");
    fp.at_bound = p.boolean("at_bound");
    p.reject_unknown_keys("accepted keys: name, value, standard_error, pinned_by, at_bound");
    f.parameters.push_back(std::move(fp));
  }
  const nlohmann::json& refused = in.array("refused");
  for (std::size_t i = 0; i < refused.size(); ++i) {
    ObjectReader r(refused[i], where, fmt::format("/fit/refused/{}", i));
    f.refused.push_back({r.string("name"), r.string("why")});
    r.reject_unknown_keys("accepted keys: name, why");
  }
  ObjectReader error = in.object("error_pct");
  f.median_abs_error_before_pct = error.number("median_before", 0, 1e6);
  f.max_abs_error_before_pct = error.number("max_before", 0, 1e6);
  f.median_abs_error_after_pct = error.number("median_after", 0, 1e6);
  f.max_abs_error_after_pct = error.number("max_after", 0, 1e6);
  error.reject_unknown_keys("accepted keys: median_before, max_before, median_after, max_after");
  in.reject_unknown_keys("accepted keys: method, inputs, points, parameters, refused, error_pct");
  return f;
}

nlohmann::ordered_json fit_to_json(const hardware::FitRecord& f) {
  nlohmann::ordered_json j;
  j["method"] = f.method;
  j["inputs"] = f.inputs;
  j["points"] = f.points;
  nlohmann::ordered_json params = nlohmann::ordered_json::array();
  for (const auto& p : f.parameters) {
    nlohmann::ordered_json o;
    o["name"] = p.name;
    o["value"] = p.value;
    if (p.standard_error) o["standard_error"] = *p.standard_error;
    o["pinned_by"] = p.pinned_by;
    o["at_bound"] = p.at_bound;
    params.push_back(o);
  }
  j["parameters"] = params;
  nlohmann::ordered_json refused = nlohmann::ordered_json::array();
  for (const auto& r : f.refused) refused.push_back({{"name", r.name}, {"why", r.why}});
  j["refused"] = refused;
  j["error_pct"] = {{"median_before", f.median_abs_error_before_pct},
                    {"max_before", f.max_abs_error_before_pct},
                    {"median_after", f.median_abs_error_after_pct},
                    {"max_after", f.max_abs_error_after_pct}};
  return j;
}

}  // namespace ptsim::config::internal

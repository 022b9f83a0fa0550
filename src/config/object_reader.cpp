// Strict JSON object reads (see internal/object_reader.hpp).
#include "internal/object_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>
#include <fstream>
#include <sstream>

#include "ptsim/common/error.hpp"
#include "ptsim/config/input_files.hpp"

namespace ptsim::config::internal {

using nlohmann::json;

nlohmann::ordered_json read_ordered_json_file(const std::string& path, InputFiles& inputs) {
  read_json_file(path, inputs);  // readable and valid JSON, or an error naming the file
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::ordered_json::parse(text.str());
}

json read_json_file(const std::string& path, InputFiles& inputs) {
  inputs.record(path);
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("{}: cannot open the file; check the path and permissions", path));
  std::stringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::parse_error& e) {
    // nlohmann's message already names the line and column.
    throw ConfigError(fmt::format("{}: not valid JSON: {}", path, e.what()));
  } catch (const json::out_of_range& e) {
    // A number beyond a double (1e400): nlohmann names it. Found by fuzz_model.
    throw ConfigError(fmt::format("{}: a number is out of range: {}", path, e.what()));
  }
}

std::string show(const json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

ObjectReader::ObjectReader(const json& object, std::string where, std::string path)
    : object_(&object), where_(std::move(where)), path_(std::move(path)) {
  if (!object.is_object())
    throw ConfigError(fmt::format("{}: {} = {} must be a JSON object {{...}}", where_,
                                  path_.empty() ? "the document" : path_, show(object)));
}

std::string ObjectReader::locate(const std::string& key) const {
  return fmt::format("{}: {}/{}", where_, path_, key);
}

void ObjectReader::fail(const std::string& key, const std::string& rule) const {
  const auto it = object_->find(key);
  if (it == object_->end()) throw ConfigError(fmt::format("{} {}", locate(key), rule));
  throw ConfigError(fmt::format("{} = {} {}", locate(key), show(*it), rule));
}

bool ObjectReader::has(const std::string& key) const {
  const auto it = object_->find(key);
  return it != object_->end() && !it->is_null();
}

const json& ObjectReader::at(const std::string& key) {
  seen_.insert(key);
  const auto it = object_->find(key);
  if (it == object_->end() || it->is_null())
    throw ConfigError(fmt::format("{} is missing; this key is required", locate(key)));
  return *it;
}

std::int64_t ObjectReader::integer(const std::string& key, std::int64_t min, std::int64_t max) {
  const json& v = at(key);
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!(std::isfinite(d) && d == std::floor(d)))
      fail(key, fmt::format("must be a whole number in [{}, {}]", min, max));
  } else if (!v.is_number_integer()) {
    fail(key, fmt::format("must be an integer in [{}, {}]", min, max));
  }
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max))
    fail(key, fmt::format("is out of range: it must lie in [{}, {}]", min, max));
  const double d = v.get<double>();
  if (d < static_cast<double>(min) || d > static_cast<double>(max))
    fail(key, fmt::format("is out of range: it must lie in [{}, {}]", min, max));
  return v.is_number_float() ? static_cast<std::int64_t>(d) : v.get<std::int64_t>();
}

std::optional<std::int64_t> ObjectReader::optional_integer(const std::string& key,
                                                           std::int64_t min, std::int64_t max) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return integer(key, min, max);
}

double ObjectReader::number(const std::string& key, double min, double max) {
  const json& v = at(key);
  if (!v.is_number()) fail(key, fmt::format("must be a number in [{}, {}]", min, max));
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < min || d > max)
    fail(key, fmt::format("is out of range: it must lie in [{}, {}]", min, max));
  return d;
}

std::optional<double> ObjectReader::optional_number(const std::string& key, double min,
                                                    double max) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return number(key, min, max);
}

bool ObjectReader::boolean(const std::string& key) {
  const json& v = at(key);
  if (!v.is_boolean()) fail(key, "must be true or false");
  return v.get<bool>();
}

std::optional<bool> ObjectReader::optional_boolean(const std::string& key) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return boolean(key);
}

std::string ObjectReader::string(const std::string& key) {
  const json& v = at(key);
  if (!v.is_string()) fail(key, "must be a string");
  return v.get<std::string>();
}

std::optional<std::string> ObjectReader::optional_string(const std::string& key) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return string(key);
}

std::string ObjectReader::choice(const std::string& key, const std::vector<std::string>& allowed) {
  const std::string value = string(key);
  for (const auto& a : allowed)
    if (value == a) return value;
  fail(key, fmt::format("is not one of the accepted values: {}", fmt::join(allowed, ", ")));
}

std::optional<std::string> ObjectReader::optional_choice(const std::string& key,
                                                         const std::vector<std::string>& allowed) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return choice(key, allowed);
}

std::vector<std::string> ObjectReader::keys() const {
  std::vector<std::string> out;
  for (const auto& [key, value] : object_->items()) out.push_back(key);
  return out;
}

ObjectReader ObjectReader::object(const std::string& key) {
  return ObjectReader(at(key), where_, path_ + "/" + key);
}

const json& ObjectReader::array(const std::string& key) {
  const json& v = at(key);
  if (!v.is_array()) fail(key, "must be a JSON array [...]");
  return v;
}

std::vector<double> ObjectReader::numbers(const std::string& key, double min, double max, const std::string& why) {
  const json& list = array(key);
  if (list.empty()) fail(key, "is empty; it needs at least one number");
  std::vector<double> out;
  out.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& v = list[i];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < min || v.get<double>() > max)
      fail(fmt::format("{}/{}", key, i), fmt::format("= {} must be a number in [{:g}, {:g}]{}{}", show(v), min, max,
                                                      why.empty() ? "" : "; ", why));
    out.push_back(v.get<double>());
  }
  return out;
}

void ObjectReader::reject_unknown_keys(const std::string& fix) const {
  std::vector<std::string> unknown;
  for (const auto& [key, value] : object_->items())
    if (!seen_.contains(key)) unknown.push_back(key);
  if (unknown.empty()) return;
  throw ConfigError(fmt::format("{}: unknown key{} {} in {}; {}", where_,
                                unknown.size() > 1 ? "s" : "",
                                fmt::format("'{}'", fmt::join(unknown, "', '")),
                                path_.empty() ? "the document" : path_, fix));
}

}  // namespace ptsim::config::internal

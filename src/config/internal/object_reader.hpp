// ObjectReader: strict, typed reads of one JSON object, each error naming the
// file, the key path, the value, the rule and the fix. Remembers which keys
// were read so that unknown keys can be rejected. Private to config/.
#pragma once

#include <nlohmann/json.hpp>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ptsim/config/input_files.hpp"

namespace ptsim::config::internal {

/// Reads and parses a JSON file, recorded in `inputs` (even when it cannot be
/// read: a path given as an input is never an output); throws ConfigError
/// naming the file when it cannot be read or is not valid JSON.
nlohmann::json read_json_file(const std::string& path, InputFiles& inputs);

/// A JSON file parsed with its own key order kept (for files ptsim writes
/// back: a calibrated or fitted profile); errors as read_json_file's.
nlohmann::ordered_json read_ordered_json_file(const std::string& path, InputFiles& inputs);

/// JSON values printed the way the user wrote them, shortened when long.
std::string show(const nlohmann::json& value);

class ObjectReader {
 public:
  /// `where` is the file name, `path` the JSON pointer of the object ("" for the root).
  ObjectReader(const nlohmann::json& object, std::string where, std::string path = "");

  bool has(const std::string& key) const;
  std::int64_t integer(const std::string& key, std::int64_t min, std::int64_t max);
  std::optional<std::int64_t> optional_integer(const std::string& key, std::int64_t min,
                                               std::int64_t max);
  double number(const std::string& key, double min, double max);
  std::optional<double> optional_number(const std::string& key, double min, double max);
  bool boolean(const std::string& key);
  std::optional<bool> optional_boolean(const std::string& key);
  std::string string(const std::string& key);
  std::optional<std::string> optional_string(const std::string& key);
  /// A string that must be one of `allowed`.
  std::string choice(const std::string& key, const std::vector<std::string>& allowed);
  std::optional<std::string> optional_choice(const std::string& key,
                                             const std::vector<std::string>& allowed);
  /// A nested object's reader.
  ObjectReader object(const std::string& key);
  const nlohmann::json& array(const std::string& key);
  /// A non-empty array of finite numbers, each in [min, max]; `why`, if
  /// given, ends the message about a number outside (what such a value means).
  std::vector<double> numbers(const std::string& key, double min, double max, const std::string& why = "");
  /// The object's keys, in the file's order (none marked read).
  std::vector<std::string> keys() const;
  /// Marks a key as understood without reading it.
  void skip(const std::string& key) { seen_.insert(key); }

  /// Throws ConfigError naming every key that was never read.
  void reject_unknown_keys(const std::string& fix) const;

  /// "file: /path/key" for messages.
  std::string locate(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& rule) const;

 private:
  const nlohmann::json& at(const std::string& key);
  const nlohmann::json* object_;
  std::string where_;
  std::string path_;
  std::set<std::string> seen_;
};

}  // namespace ptsim::config::internal

// A Megatron-LM launch line's flags as pretrain_gpt.py's argparse reads
// them (each checked against Megatron's own flag list, which says how many
// values it takes), and the two readers that turn them into ptsim's model
// and strategy JSON. Private to config/; see megatron_args.hpp.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ptsim::config::internal {

inline constexpr const char* kMegatronWhere = "the Megatron-LM arguments";

// A flag and the values it was given.
struct GivenFlag {
  std::string name;
  std::vector<std::string> values;
};

class LaunchFlags {
 public:
  /// Reads `args` in order; throws ConfigError for a token that is not a
  /// flag, a flag Megatron-LM does not have (naming the nearest), or a
  /// value count its argparse would refuse.
  explicit LaunchFlags(const std::vector<std::string>& args);

  /// Whether the flag was given; its last occurrence (argparse's rule).
  bool has(std::string_view name) const { return last_.count(name) > 0; }
  const GivenFlag& get(std::string_view name) const { return *last_.find(name)->second; }
  /// Marks a flag as read: what a step costs has been decided for it.
  void take(std::string_view name) { taken_.emplace_back(name); }
  bool taken(std::string_view name) const;
  /// Every occurrence, in order.
  const std::vector<GivenFlag>& given() const { return given_; }

 private:
  std::vector<GivenFlag> given_;
  std::map<std::string, const GivenFlag*, std::less<>> last_;
  std::vector<std::string> taken_;
};

/// The flag's first value as a whole number / a finite number / one of
/// `accepted` (`why`: what is not modelled); ConfigError naming the flag.
std::int64_t integer_of(const GivenFlag& g);
double number_of(const GivenFlag& g);
std::string choice_of(const GivenFlag& g, std::initializer_list<std::string_view> accepted,
                      const std::string& why = "");

/// The model's JSON (parse_model's keys) from the architecture flags,
/// Megatron's defaults where a flag is absent (megatron_model_flags.cpp).
nlohmann::json megatron_model_json(LaunchFlags& flags);

/// The strategy's JSON (parse_strategy's keys) from the parallelism,
/// batch, precision, recomputation, attention and overlap flags; `notes`
/// gets what Megatron's own argument checks change (megatron_strategy_flags.cpp).
nlohmann::json megatron_strategy_json(LaunchFlags& flags, std::vector<std::string>& notes);

}  // namespace ptsim::config::internal

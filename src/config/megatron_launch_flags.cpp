// Reading a launch line's flags (see internal/megatron_launch_flags.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "internal/megatron_flags.hpp"
#include "internal/megatron_launch_flags.hpp"
#include "ptsim/common/edit_distance.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/common/parse_number.hpp"

namespace ptsim::config::internal {

namespace {

const MegatronFlag* find_flag(std::string_view name) {
  const auto flags = megatron_flags();
  const auto it = std::lower_bound(flags.begin(), flags.end(), name,
                                   [](const MegatronFlag& f, std::string_view n) { return f.name < n; });
  return it != flags.end() && it->name == name ? &*it : nullptr;
}

[[noreturn]] void unknown_flag(const std::string& name) {
  std::string_view best;
  std::size_t best_distance = 0;
  for (const auto& f : megatron_flags()) {
    const std::size_t d = edit_distance(name, f.name);
    if (best.empty() || d < best_distance) {
      best = f.name;
      best_distance = d;
    }
  }
  const bool close = !best.empty() && best_distance <= std::max<std::size_t>(2, name.size() / 4);
  throw ConfigError(
      fmt::format("{}: {} is not a flag of Megatron-LM's pretrain_gpt.py (its flags as of "
                  "NVIDIA/Megatron-LM {}){}",
                  kMegatronWhere, name, megatron_flags_commit(),
                  close ? fmt::format("; did you mean {}?", best) : std::string()));
}

}  // namespace

LaunchFlags::LaunchFlags(const std::vector<std::string>& args) {
  std::vector<GivenFlag>& out = given_;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& token = args[i];
    if (!token.starts_with("--") || token.size() == 2) {
      // argparse refuses it as well ("unrecognized arguments"); the usual
      // cause is a value with spaces split into words by an unquoted
      // "${ARGS[@]}" in a launch script.
      const std::string after = out.empty()
                                    ? std::string()
                                    : fmt::format(
                                          " (it follows {} {}: a value with spaces must reach pretrain_gpt.py as one "
                                          "argument; quote it, and the array's expansion, \"${{ARGS[@]}}\")",
                                          out.back().name, fmt::join(out.back().values, " "));
      throw ConfigError(
          fmt::format("{}: '{}' is not a flag; pretrain_gpt.py takes --name [value] pairs (put "
                      "only its arguments after '--', not the launcher or the script){}",
                      kMegatronWhere, token, after));
    }
    const auto eq = token.find('=');
    GivenFlag g{token.substr(0, eq), {}};
    const MegatronFlag* flag = find_flag(g.name);
    if (flag == nullptr) unknown_flag(g.name);
    const bool inline_value = eq != std::string::npos;
    if (inline_value) g.values.push_back(token.substr(eq + 1));
    const auto next_is_value = [&] { return i + 1 < args.size() && !args[i + 1].starts_with("--"); };
    switch (flag->arity) {
      case MegatronArity::None:
        if (inline_value) throw ConfigError(fmt::format("{}: {} takes no value", kMegatronWhere, g.name));
        break;
      case MegatronArity::One:
        if (!inline_value) {
          if (!next_is_value()) throw ConfigError(fmt::format("{}: {} needs a value", kMegatronWhere, g.name));
          g.values.push_back(args[++i]);
        }
        break;
      case MegatronArity::Optional:
        if (!inline_value && next_is_value()) g.values.push_back(args[++i]);
        break;
      case MegatronArity::Many:
        while (next_is_value()) g.values.push_back(args[++i]);
        if (g.values.empty()) throw ConfigError(fmt::format("{}: {} needs one value or more", kMegatronWhere, g.name));
        break;
    }
    out.push_back(std::move(g));
  }
  for (const GivenFlag& g : given_) last_[g.name] = &g;
}

bool LaunchFlags::taken(std::string_view name) const {
  return std::find(taken_.begin(), taken_.end(), name) != taken_.end();
}

std::int64_t integer_of(const GivenFlag& g) {
  const std::string& v = g.values.at(0);
  const auto n = whole_number(v);
  if (!n) throw ConfigError(fmt::format("{}: {} {}: not a whole number", kMegatronWhere, g.name, v));
  return *n;
}

double number_of(const GivenFlag& g) {
  const std::string& v = g.values.at(0);
  const auto x = decimal_number(v);
  if (!x || !std::isfinite(*x)) throw ConfigError(fmt::format("{}: {} {}: not a number", kMegatronWhere, g.name, v));
  return *x;
}

std::string choice_of(const GivenFlag& g, std::initializer_list<std::string_view> accepted, const std::string& why) {
  const std::string& v = g.values.at(0);
  if (std::find(accepted.begin(), accepted.end(), v) == accepted.end())
    throw ConfigError(fmt::format("{}: {} {}: ptsim simulates {}{}", kMegatronWhere, g.name, v,
                                  fmt::join(accepted, ", "), why.empty() ? "" : "; " + why));
  return v;
}

}  // namespace ptsim::config::internal

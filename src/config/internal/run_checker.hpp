// The checks resolve_run makes, each failure naming the strategy field,
// its value, the rule and the fix; and the pipeline's checks, which
// resolve_pipeline.cpp makes. Private to config/.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptsim/common/error.hpp"
#include "ptsim/config/strategy_input.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/strategy/parallel_config.hpp"
#include "ptsim/strategy/schedule.hpp"

namespace ptsim::config::internal {

inline constexpr std::int64_t kMaxGpus = std::int64_t{1} << 24;  // 16.7 M GPUs
inline constexpr std::int64_t kMaxBatch = std::int64_t{1} << 31;
inline constexpr std::int64_t kMaxSeq = std::int64_t{1} << 24;

inline std::string divisors_hint(std::int64_t n) {
  std::vector<std::int64_t> d;
  for (std::int64_t i = 1; i <= n && d.size() < 8; ++i)
    if (n % i == 0) d.push_back(i);
  return fmt::format("{}", fmt::join(d, ", "));
}

class Checker {
 public:
  Checker(const StrategyInput& s, const model::ModelSpec& m) : s_(s), m_(m) {}

  std::int64_t bounded(const std::optional<std::int64_t>& v, std::int64_t fallback, const std::string& field,
                       std::int64_t max) const {
    const std::int64_t x = v.value_or(fallback);
    if (x < 1 || x > max) fail(field, x, fmt::format("must lie in [1, {}]", max), "use a realistic value");
    return x;
  }

  /// `field` must divide `n`, the model's `what`.
  void divides(const std::string& field, std::int64_t value, std::int64_t n, const std::string& what,
               const std::string& why = "") const {
    if (n % value == 0) return;
    fail(field, value, fmt::format("must divide {} = {} (model {}{})", what, n, m_.name, why.empty() ? "" : ": " + why),
         fmt::format("choose one of {}", divisors_hint(n)));
  }

  [[noreturn]] void fail(const std::string& field, std::int64_t value, const std::string& rule,
                         const std::string& fix) const {
    throw ConfigError(fmt::format("{} = {} {}; {}", s_.where(field), value, rule, fix));
  }

  [[noreturn]] void fail(const std::string& field, const std::string& value, const std::string& rule,
                         const std::string& fix) const {
    throw ConfigError(fmt::format("{} = {} {}; {}", s_.where(field), value, rule, fix));
  }

  /// A boolean flag that may not be combined with the current setting.
  [[noreturn]] void fail_flag(const std::string& field, const std::string& rule, const std::string& fix) const {
    throw ConfigError(fmt::format("{} {}; {}", s_.where(field), rule, fix));
  }

 private:
  const StrategyInput& s_;
  const model::ModelSpec& m_;
};

/// A schedule's rule broken: the field, its value, the rule and the fix.
inline void enforce(const Checker& check, const std::optional<strategy::ScheduleViolation>& v) {
  if (v) check.fail(v->field, v->value, v->rule, v->fix);
}

/// Pipeline size, virtual stages and their layers, the schedule and its
/// rules on the pipeline (resolve_pipeline.cpp).
void check_pipeline(const Checker& check, const model::ModelSpec& m, strategy::ParallelConfig& c,
                    const StrategyInput& s);

}  // namespace ptsim::config::internal

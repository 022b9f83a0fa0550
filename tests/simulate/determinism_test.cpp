// Same inputs, same bytes out; the symmetric mode agrees with the explicit one.
#include <regex>
#include <sstream>

#include "ptsim/report/json_report.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {
config::StrategyInput small_strategy() {
  config::StrategyInput s;
  s.gpus = 32;
  s.tp = 2;
  s.pp = 4;
  s.global_batch_size = 32;
  s.micro_batch_size = 2;
  return s;
}

std::string json_without_wall_time(const report::StepResult& r) {
  std::ostringstream out;
  report::write_json(r, out);
  return std::regex_replace(out.str(), std::regex("\"wall_s\": [0-9.e+-]+"), "\"wall_s\": 0");
}
}  // namespace

TEST_CASE("The same inputs give byte-identical JSON apart from wall time", "[simulate]") {
  const auto m = test::shipped_model("tiny");
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  const auto a = test::simulate(m, hw, small_strategy());
  const auto b = test::simulate(m, hw, small_strategy());
  CHECK(json_without_wall_time(a.result) == json_without_wall_time(b.result));
  CHECK(a.run.fingerprint == b.run.fingerprint);
}

TEST_CASE("Symmetric and explicit modes agree on a homogeneous cluster", "[simulate]") {
  const auto m = test::shipped_model("tiny");
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");
  const auto e = test::simulate(m, hw, small_strategy(), simulate::Mode::Explicit);
  const auto s = test::simulate(m, hw, small_strategy(), simulate::Mode::Symmetric);
  CHECK(s.result.simulation.ranks_simulated == 4);
  CHECK(e.result.simulation.ranks_simulated == 32);
  CHECK(s.result.step_time_s == e.result.step_time_s);
  CHECK(s.result.memory.peak_bytes == e.result.memory.peak_bytes);
  CHECK(s.result.breakdown.pipeline_bubble_s == e.result.breakdown.pipeline_bubble_s);
}

TEST_CASE("The breakdown sums to the step time", "[simulate]") {
  const auto out = test::simulate(test::shipped_model("tiny"), test::shipped_hardware("a100-sxm4-80gb"), small_strategy());
  const auto& b = out.result.breakdown;
  CHECK(b.host_issue_s > 0);  // the tiny model's kernels are shorter than the default host cost
  CHECK(b.compute_s + b.exposed_communication_s + b.pipeline_bubble_s + b.host_issue_s + b.optimizer_s ==
        Approx(out.result.step_time_s).epsilon(1e-12));
}

// The host side of a step (--host-overhead-us): a step of small kernels that
// the host issues more slowly than the GPU runs them takes what the host
// takes; a step of large kernels does not notice it.
#include "test_support.hpp"

using namespace ptsim;

namespace {

config::StrategyInput one_gpu(double host_us) {
  config::StrategyInput s;
  s.gpus = 1;
  s.global_batch_size = 2;
  s.micro_batch_size = 1;
  s.host_overhead_us = host_us;
  return s;
}

}  // namespace

TEST_CASE("A host far slower than the kernels makes the step its tasks times their host time",
          "[simulate][host]") {
  // 10 ms of host per task dwarfs every kernel of the tiny model: the last
  // task is issued at tasks · 10 ms and runs for less than a millisecond.
  const auto m = test::shipped_model("tiny");
  const auto hw = test::shipped_hardware("h100-sxm5-80gb");
  const auto out = test::simulate(m, hw, one_gpu(10'000));
  const double host_s = static_cast<double>(out.run.tasks) * 10e-3;
  CHECK(out.result.step_time_s >= host_s);
  CHECK(out.result.step_time_s <= host_s + 1e-3);
  const auto& b = out.result.breakdown;
  CHECK(b.host_issue_s > 0.99 * (out.result.step_time_s - b.compute_s - b.optimizer_s));
  CHECK(b.compute_s + b.exposed_communication_s + b.pipeline_bubble_s + b.host_issue_s + b.optimizer_s ==
        Approx(out.result.step_time_s).epsilon(1e-12));
}

TEST_CASE("Without host time, or with a host that keeps ahead, the step is the GPU's", "[simulate][host]") {
  // Micro-batches of one 2,048-token sequence of the 1.7B GPT: kernels of
  // hundreds of µs, which the default host keeps ahead of too.
  const auto m = test::shipped_model("narayanan21-gpt-1.7b");
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");
  const auto gpu = test::simulate(m, hw, one_gpu(0));
  CHECK(gpu.result.breakdown.host_issue_s == 0);
  // 5 µs per task against kernels of hundreds of µs: only the first issue shows.
  const auto host = test::simulate(m, hw, one_gpu(5));
  CHECK(host.result.step_time_s == Approx(gpu.result.step_time_s).epsilon(1e-3));
  CHECK(host.result.step_time_s >= gpu.result.step_time_s + 5e-6);
  config::StrategyInput by_default = one_gpu(0);
  by_default.host_overhead_us.reset();
  const auto standard = test::simulate(m, hw, by_default);
  CHECK(standard.result.host_overhead_s == 70e-6);
  CHECK(standard.result.step_time_s == Approx(gpu.result.step_time_s).epsilon(1e-3));
}

TEST_CASE("Symmetric and explicit modes agree on a host-bound step", "[simulate][host]") {
  config::StrategyInput s;
  s.gpus = 16;
  s.tp = 2;
  s.pp = 2;
  s.global_batch_size = 16;
  s.micro_batch_size = 1;
  s.host_overhead_us = 200;
  const auto m = test::shipped_model("tiny");
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");
  const auto e = test::simulate(m, hw, s, simulate::Mode::Explicit);
  const auto y = test::simulate(m, hw, s, simulate::Mode::Symmetric);
  CHECK(e.result.breakdown.host_issue_s > 0);
  CHECK(y.result.step_time_s == e.result.step_time_s);
  CHECK(y.result.breakdown.host_issue_s == e.result.breakdown.host_issue_s);
}

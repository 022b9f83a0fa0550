// The host side of a step (--host-overhead-us): a step of small kernels that
// the host issues more slowly than the GPU runs them takes what the host
// takes; a step of large kernels does not notice it.
#include "simulate/pipeline_support.hpp"
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
  CHECK(standard.result.host_overhead_s == 65e-6);
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

namespace {

// Tasks of stage `stage`'s program after which the host synchronizes.
std::int64_t host_syncs(const workload::StepWorkload& step, std::size_t stage) {
  const auto& program = step.workload.programs[step.workload.program_of_rank[stage]];
  std::int64_t n = 0;
  for (taskgraph::TaskId t = 0; t < program.num_tasks(); ++t)
    n += (program.task(t).flags & taskgraph::kHostSync) != 0;
  return n;
}

}  // namespace

TEST_CASE("Under --batch-p2p-sync each stage synchronizes as often as Megatron's 1F1B calls _communicate",
          "[simulate][host]") {
  // Megatron-LM's 1F1B (schedules.py forward_backward_pipelining_without_
  // interleaving, p2p_communication.py) with p stages and m micro-batches,
  // w = p − s − 1 warmup forwards on stage s. Calls that move something:
  //   first stage: w send_forward, m − w send_forward_recv_backward, w recv_backward: m + w;
  //   last stage: one recv_forward, m send_backward_recv_forward (the last a send_backward): m + 1;
  //   others: 2w in warmup, one recv_forward, 2(m − w) in the steady state, 2w in cooldown: 2m + 2w + 1.
  const std::int64_t p = 4, m = 8;
  auto s = test::pipeline(p, m, "1f1b");
  s.batch_p2p_sync = true;
  const auto run = config::resolve_run(test::balanced_gpt(8), s);
  const auto step = workload::build_step_workload(run.model, run.parallel);
  for (std::int64_t stage = 0; stage < p; ++stage) {
    INFO("stage " << stage);
    const std::int64_t w = p - stage - 1;
    const std::int64_t calls = stage == 0 ? m + w : stage == p - 1 ? m + 1 : 2 * m + 2 * w + 1;
    CHECK(host_syncs(step, static_cast<std::size_t>(stage)) == calls);
  }
  // Without the setting, none.
  s.batch_p2p_sync.reset();
  const auto plain = workload::build_step_workload(run.model, config::resolve_run(test::balanced_gpt(8), s).parallel);
  for (std::size_t stage = 0; stage < static_cast<std::size_t>(p); ++stage) CHECK(host_syncs(plain, stage) == 0);
}

TEST_CASE("Host synchronizations after pipeline transfers lengthen a step and never deadlock it",
          "[simulate][host]") {
  const auto m = test::balanced_gpt(8);
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");
  for (const auto& [schedule, vpp] : std::vector<std::pair<std::string, std::int64_t>>{
           {"1f1b", 1}, {"gpipe", 1}, {"interleaved", 2}, {"interleaved", 4}}) {
    for (const std::int64_t micro : {2, 4, 8}) {
      INFO(schedule << " vpp " << vpp << ", " << micro << " micro-batches");
      auto s = test::pipeline(2, micro, schedule);
      if (vpp > 1) s.vpp = vpp;
      s.host_overhead_us = 20;
      const auto plain = test::simulate(m, hw, s);
      s.batch_p2p_sync = true;
      const auto synced = test::simulate(m, hw, s);
      CHECK(synced.result.step_time_s > plain.result.step_time_s);
      // Megatron-Core's --overlap-p2p-communication: the interleaved schedule
      // does not batch, so does not synchronize.
      s.overlap_p2p_comm = true;
      const auto overlapped = test::simulate(m, hw, s);
      if (schedule == "interleaved") {
        CHECK(overlapped.result.step_time_s == plain.result.step_time_s);
      } else {
        CHECK(overlapped.result.step_time_s == synced.result.step_time_s);
      }
    }
  }
  // Explicit and symmetric modes agree.
  auto s = test::pipeline(2, 4, "1f1b");
  s.gpus = 8;
  s.tp = 2;
  s.batch_p2p_sync = true;
  s.host_overhead_us = 50;
  CHECK(test::simulate(m, hw, s, simulate::Mode::Explicit).result.step_time_s ==
        test::simulate(m, hw, s, simulate::Mode::Symmetric).result.step_time_s);
  // Zero-bubble and DualPipe schedules are not Megatron-LM's.
  s.schedule = "zb-h1";
  CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains("batch-p2p-sync") && Catch::Contains("zb-h1"));
}

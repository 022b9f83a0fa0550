// FLOP accounting of the built step against Narayanan et al. 2021.
#include "ptsim/workload/step_workload.hpp"

#include "test_support.hpp"

using namespace ptsim;

namespace {
workload::StepWorkload build(const std::string& recompute) {
  config::StrategyInput s;
  s.gpus = 64;
  s.tp = 8;
  s.pp = 8;
  s.global_batch_size = 8;
  s.recompute = recompute;
  const auto run = config::resolve_run(test::shipped_model("gpt3-175b"), s);
  return workload::build_step_workload(run.model, run.parallel);
}
}  // namespace

TEST_CASE("GPT-3 175B model FLOPs follow Narayanan's 72-formula", "[workload]") {
  // Narayanan et al. 2021, eq. (3) without recomputation:
  //   F = 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h))
  const double B = 8, s = 2048, l = 96, h = 12288, V = 51200;
  const double expected = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  const auto step = build("none");
  CHECK(step.model_flops == Approx(expected).epsilon(0.01));
  CHECK(step.hardware_flops == Approx(step.model_flops));
}

TEST_CASE("With full recomputation hardware FLOPs follow the 96-formula", "[workload]") {
  // Narayanan et al. 2021, eq. (3): an extra forward pass of every layer, the
  // LM head excepted: F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)).
  const double B = 8, s = 2048, l = 96, h = 12288, V = 51200;
  const double expected = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  const auto step = build("full");
  CHECK(step.hardware_flops == Approx(expected).epsilon(0.01));
  CHECK(step.model_flops == Approx(72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))).epsilon(0.01));
}

TEST_CASE("Megatron pads the vocabulary to a multiple of 128·tp", "[workload]") {
  CHECK(workload::padded_vocab_size(50257, 1) == 50304);
  CHECK(workload::padded_vocab_size(50257, 8) == 51200);
  CHECK(workload::padded_vocab_size(51200, 8) == 51200);
  CHECK(workload::padded_vocab_size(128256, 8) == 129024);
}

// Megatron-Core's first and last layers in bf16 (first_last_layers_bf16)
// against closed forms: Llama 3 8B (32 layers of kLayer parameters) on 8
// B200s, data-parallel, MXFP8 or per-tensor FP8.
#include <cmath>

#include "simulate/llama3_8b_parameters.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

using test::llama3_8b::kBoundary;
using test::llama3_8b::kLayer;

config::StrategyInput llama(const char* recipe) {
  config::StrategyInput st;
  st.gpus = 8;
  st.global_batch_size = 8;
  st.seq_length = 4096;
  st.distributed_optimizer = true;
  if (recipe != nullptr) {
    st.precision = "fp8";
    st.fp8_recipe = recipe;
  }
  return st;
}

config::StrategyInput in_bf16(config::StrategyInput st, std::int64_t start, std::int64_t end) {
  st.first_last_layers_bf16 = true;
  st.bf16_layers_at_start = start;
  st.bf16_layers_at_end = end;
  return st;
}

report::StepResult run(const config::StrategyInput& st) {
  return test::simulate(test::shipped_model("llama3-8b"), test::shipped_hardware("b200-sxm-180gb"), st).result;
}

// Calls per step of the layers' linear GEMMs in `dtype` (forward, input
// and weight gradients).
std::uint64_t gemm_calls(const config::StrategyInput& st, Dtype dtype) {
  return test::gemm_calls(test::shipped_model("llama3-8b"), test::shipped_hardware("b200-sxm-180gb"), st, dtype);
}

}  // namespace

TEST_CASE("Layers kept in bf16 run their GEMMs in bf16 and keep no quantized weights", "[simulate][bf16_layers]") {
  const auto mx = llama("mxfp8");
  const auto kept = in_bf16(mx, 1, 1);
  // Each layer has four linears (QKV, output, fused gate-up, down), each a
  // forward, an input-gradient and a weight-gradient GEMM: 12 a layer.
  CHECK(gemm_calls(mx, Dtype::Mxfp8) == 32 * 12);
  CHECK(gemm_calls(kept, Dtype::Mxfp8) == 30 * 12);
  CHECK(gemm_calls(kept, Dtype::Bf16) - gemm_calls(mx, Dtype::Bf16) == 2 * 12);
  // Transformer Engine's weight cache: each quantized weight's two MXFP8
  // copies (1 + 1/32 bytes an element each) beside its bf16 one; the two
  // bf16 layers have none.
  const auto bf16 = run(llama(nullptr));
  const auto quantized = run(mx);
  const auto first_last = run(kept);
  const double copies = 2 * (1 + 1.0 / 32);
  CHECK(static_cast<double>(quantized.memory.params_bytes - bf16.memory.params_bytes) ==
        Approx(copies * 32 * kLayer).epsilon(1e-6));
  CHECK(static_cast<double>(first_last.memory.params_bytes - bf16.memory.params_bytes) ==
        Approx(copies * 30 * kLayer).epsilon(1e-6));
  // bf16 GEMMs are slower than MXFP8 ones: the step lies between the two.
  CHECK(first_last.step_time_s > quantized.step_time_s);
  CHECK(first_last.step_time_s < bf16.step_time_s);
  CHECK((first_last.bf16_layers_at_start == 1 && first_last.bf16_layers_at_end == 1));
}

TEST_CASE("Every layer kept in bf16 costs what bf16 training costs", "[simulate][bf16_layers]") {
  // MXFP8 casts nothing outside the layers and reduces no amaxes, so with
  // all 32 layers (pp 1: at most 32 a count) in bf16 nothing of it is left.
  const auto bf16 = run(llama(nullptr));
  for (const auto& [start, end] : {std::pair{32, 0}, {0, 32}, {16, 16}}) {
    const auto all = run(in_bf16(llama("mxfp8"), start, end));
    CHECK(all.step_time_s == Approx(bf16.step_time_s).epsilon(1e-12));
    CHECK(all.memory.params_bytes == bf16.memory.params_bytes);
    CHECK(all.memory.peak_bytes == bf16.memory.peak_bytes);
  }
}

TEST_CASE("Under fp8 parameter gathering bf16 layers are gathered at two bytes a parameter",
          "[simulate][bf16_layers]") {
  // The distributed optimizer (ZeRO-1) reduce-scatters every gradient (4
  // bytes; fp32 main gradients) and gathers the updated parameters once a
  // step: a quantized layer's at one byte, a bf16 layer's and the
  // embedding's and output layer's at two.
  config::StrategyInput st = llama("tensorwise");
  st.fp8_param_gather = true;
  const auto quantized = run(st);
  const auto kept = run(in_bf16(st, 1, 2));
  const double dp = static_cast<double>(quantized.communication.at("dp").bytes);
  CHECK(dp == Approx(4 * (32 * kLayer + kBoundary) + 32 * kLayer + 2 * kBoundary).epsilon(1e-6));
  CHECK(static_cast<double>(kept.communication.at("dp").bytes) - dp == Approx(3 * kLayer).epsilon(1e-6));
  // The parameter is its fp8 copy (1 byte; on a B200 one copy serves both
  // GEMM layouts) in place of the bf16 one, except in the bf16 layers.
  CHECK(static_cast<double>(kept.memory.params_bytes - quantized.memory.params_bytes) ==
        Approx(3 * kLayer * (2 - 1)).epsilon(1e-6));
}

TEST_CASE("bf16 layers refuse what Megatron-Core refuses or ptsim does not model", "[config][bf16_layers]") {
  const auto m = test::shipped_model("llama3-8b");
  CHECK_THROWS_WITH(config::resolve_run(m, in_bf16(llama(nullptr), 1, 1)), Catch::Contains("precision is bf16"));
  CHECK_THROWS_WITH(config::resolve_run(m, in_bf16(llama("delayed"), 1, 1)),
                    Catch::Contains("Delayed scaling does not support"));
  config::StrategyInput pipelined = in_bf16(llama("mxfp8"), 1, 9);
  pipelined.pp = 4;  // 8 layers a stage
  CHECK_THROWS_WITH(config::resolve_run(m, pipelined), Catch::Contains("exceeds the layers of a pipeline stage"));
  config::StrategyInput count_alone = llama("mxfp8");
  count_alone.bf16_layers_at_end = 2;
  CHECK_THROWS_WITH(config::resolve_run(m, count_alone), Catch::Contains("add --first-last-layers-bf16"));
  // Megatron-Core's defaults: one layer at each end.
  config::StrategyInput defaults = llama("mxfp8");
  defaults.first_last_layers_bf16 = true;
  const auto c = config::resolve_run(m, defaults).parallel;
  CHECK((c.bf16_layers_at_start == 1 && c.bf16_layers_at_end == 1));
  CHECK((c.bf16_layer(0, 32) && !c.bf16_layer(1, 32) && !c.bf16_layer(30, 32) && c.bf16_layer(31, 32)));
}

TEST_CASE("A launch line's bf16 layer flags give the strategy's keys", "[config][bf16_layers]") {
  const auto launch =
      test::small_launch({"--fp8-format", "e4m3", "--fp8-recipe", "tensorwise", "--first-last-layers-bf16",
                          "--num-layers-at-start-in-bf16", "0", "--num-layers-at-end-in-bf16", "2"});
  CHECK(launch.strategy.first_last_layers_bf16 == true);
  CHECK(launch.strategy.bf16_layers_at_start == 0);
  CHECK(launch.strategy.bf16_layers_at_end == 2);
  // Without FP8 or FP4 training Megatron-LM leaves the layers alone.
  const auto plain = test::small_launch({"--first-last-layers-bf16", "--num-layers-at-end-in-bf16", "2"});
  CHECK_FALSE(plain.strategy.first_last_layers_bf16.has_value());
  CHECK_FALSE(plain.strategy.bf16_layers_at_end.has_value());
  CHECK(plain.notes.size() == 2);
}

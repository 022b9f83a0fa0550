// Uneven routing (--moe-load-imbalance): the busiest expert-parallel rank's
// expert GEMMs, activations and exchanges carry its share of the routed
// tokens, a capacity factor caps it, and the model's FLOPs stay the routed
// tokens' (hand counts on Qwen3-30B-A3B's MoE layer).
#include <string>

#include "ptsim/common/error.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "ptsim/workload/layer_ops.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

// Qwen3-30B-A3B: h 2048, 128 experts of 768 (SwiGLU), top 8; one sequence
// of 4,096 tokens on a rank of EP 8 (16 local experts).
constexpr double kTokens = 4096, kTopK = 8, kH = 2048, kWidth = 768, kLocal = 16;

workload::MicroShape ep8(double imbalance, std::optional<double> capacity = std::nullopt) {
  workload::MicroShape s;
  s.seq_length = static_cast<std::int64_t>(kTokens);
  s.ep = 8;
  s.load_imbalance = imbalance;
  s.capacity_factor = capacity;
  return s;
}

}  // namespace

TEST_CASE("The busiest EP rank's experts and exchanges carry its share of the routed tokens", "[workload][moe]") {
  const auto m = test::shipped_model("qwen3-30b-a3b");
  for (const double f : {1.0, 1.5, 2.0}) {
    const auto ops = workload::transformer_layer_ops(m, ep8(f), 0);
    const auto& fc1 = test::op_named(ops.forward, "moe.experts.fc1");
    // Rows per local expert: f · T·k / 16 local experts.
    CHECK(static_cast<double>(fc1.shape[0]) == f * kTokens * kTopK / kLocal);
    CHECK(static_cast<double>(fc1.shape[3]) == kLocal);
    // Model FLOPs stay those of the routed tokens: 2·T·k·(2·768)·h.
    CHECK(fc1.flops == Approx(2 * kTokens * kTopK * 2 * kWidth * kH));
    // The dispatch all-to-all carries f times an even share of token copies.
    CHECK(static_cast<double>(test::op_named(ops.forward, "moe.dispatch").bytes) ==
          Approx(f * kTokens * kTopK * kH * 2));
    CHECK(static_cast<double>(test::op_named(ops.forward, "moe.combine").bytes) ==
          Approx(f * kTokens * kTopK * kH * 2));
  }
}

TEST_CASE("A capacity factor caps the busiest rank's tokens, the rest dropped", "[workload][moe]") {
  const auto m = test::shipped_model("qwen3-30b-a3b");
  // Routing 1.5 times an even share into a capacity of 1.25: the experts run
  // padded to 1.25 and the exchange carries 1.25; routing 1.1: padded to
  // 1.25, the exchange carries 1.1.
  auto ops = workload::transformer_layer_ops(m, ep8(1.5, 1.25), 0);
  CHECK(static_cast<double>(test::op_named(ops.forward, "moe.experts.fc1").shape[0]) ==
        1.25 * kTokens * kTopK / kLocal);
  CHECK(static_cast<double>(test::op_named(ops.forward, "moe.dispatch").bytes) ==
        Approx(1.25 * kTokens * kTopK * kH * 2));
  ops = workload::transformer_layer_ops(m, ep8(1.1, 1.25), 0);
  CHECK(static_cast<double>(test::op_named(ops.forward, "moe.experts.fc1").shape[0]) ==
        1.25 * kTokens * kTopK / kLocal);
  CHECK(static_cast<double>(test::op_named(ops.forward, "moe.dispatch").bytes) ==
        Approx(1.1 * kTokens * kTopK * kH * 2));
}

TEST_CASE("Load imbalance is refused where it means nothing", "[workload][moe][config]") {
  const auto m = test::shipped_model("qwen3-30b-a3b");
  config::StrategyInput s;
  s.gpus = 8;
  s.ep = 8;
  s.global_batch_size = 8;
  s.moe_load_imbalance = 1.3;
  CHECK(config::resolve_run(m, s).parallel.moe_load_imbalance == 1.3);
  s.moe_load_imbalance = 0.9;  // below an even share
  CHECK_THROWS_AS(config::resolve_run(m, s), ConfigError);
  s.moe_load_imbalance = 9;  // more than every routed token
  CHECK_THROWS_AS(config::resolve_run(m, s), ConfigError);
  s.ep = 1;
  s.moe_load_imbalance = 1.3;  // every expert local
  CHECK_THROWS_AS(config::resolve_run(m, s), ConfigError);
  s.moe_load_imbalance.reset();
  CHECK(config::resolve_run(m, s).parallel.moe_load_imbalance == 1.0);
}

// Megatron-Core's fine-grained activation offloading against closed forms:
// Mixtral 8x7B on 8 GB200s (EP 8), one micro-batch of 4,096 tokens, so that
// every layer's forward runs before any backward.
#include <cmath>

#include "test_support.hpp"

using namespace ptsim;

namespace {

// What each layer's forward keeps as its experts' activation input: fc1's
// output, the rank's 4,096 tokens routed to 2 experts each (an even share
// across 8 EP ranks brings 4,096 · 2 rows), 2 · 14,336 gated columns, bf16.
constexpr double kRows = 4096.0 * 2;
constexpr double kActInput = 2 * kRows * 2 * 14336;

config::StrategyInput mixtral(const char* modules) {
  config::StrategyInput st;
  st.gpus = 8;
  st.ep = 8;
  st.global_batch_size = 8;
  st.seq_length = 4096;
  st.distributed_optimizer = true;
  if (modules != nullptr) {
    st.activation_offloading = true;
    st.offload_modules = modules;
  }
  return st;
}

report::StepResult run(const config::StrategyInput& st, const hardware::HardwareProfile& hw) {
  return test::simulate(test::shipped_model("mixtral-8x7b"), hw, st).result;
}

}  // namespace

TEST_CASE("Offloading the experts' activation input frees it in every layer but the last", "[simulate][offload]") {
  const auto hw = test::shipped_hardware("gb200-nvl72");
  const auto kept = run(mixtral(nullptr), hw);
  const auto offloaded = run(mixtral("moe_act"), hw);
  CHECK(offloaded.offload_modules == std::vector<std::string>{"moe_act"});
  // The peak comes as the forward ends: 31 of 32 layers' inputs have gone
  // to the host, less what is still on its way (at most a layer or two:
  // a layer's copy takes about as long as its forward).
  const double freed = static_cast<double>(kept.memory.activations_peak_bytes) -
                       static_cast<double>(offloaded.memory.activations_peak_bytes);
  CHECK(freed >= 29 * kActInput);
  CHECK(freed <= 31 * kActInput);
  // Each offloaded layer's input goes out and comes back: 2 · 31 copies.
  CHECK(static_cast<double>(offloaded.communication.at("offload").bytes) == Approx(2 * 31 * kActInput));
  CHECK(offloaded.communication.at("offload").time_s ==
        Approx(2 * 31 * kActInput / *hw.gpu.host_link_bytes_per_s).epsilon(0.01));
  // Below the minimum size nothing moves.
  config::StrategyInput small = mixtral("moe_act");
  small.min_offloaded_tensor_size = static_cast<std::int64_t>(kRows * 2 * 14336) + 1;
  const auto none = run(small, hw);
  CHECK(none.memory.activations_peak_bytes == kept.memory.activations_peak_bytes);
  CHECK_FALSE(none.communication.contains("offload"));
  // fc1's input (4,096 · 2 rows of 4,096, bf16) as well under fused_group_mlp.
  const auto fused = run(mixtral("fused_group_mlp"), hw);
  const double fc2_input = 2 * kRows * 14336, fc1_input = 2 * kRows * 4096;
  CHECK(static_cast<double>(fused.communication.at("offload").bytes) ==
        Approx(2 * 31 * (kActInput + fc1_input + fc2_input)));
}

TEST_CASE("A slow host link puts the offload copies on the step's path", "[simulate][offload]") {
  auto hw = test::shipped_hardware("gb200-nvl72");
  hw.gpu.host_link_bytes_per_s = 1e9;  // 1 GB/s: a layer's copy takes about half a second
  const auto slow = run(mixtral("moe_act"), hw);
  const auto kept = run(mixtral(nullptr), hw);
  // Every copy back waits for the copies out before it, and the first
  // layer's backward for its input: the step outlasts 31 copies out and
  // one back, and the memory stays held until each copy out ends.
  const double copy = kActInput / 1e9;
  CHECK(slow.step_time_s >= 32 * copy);
  CHECK(slow.step_time_s <= kept.step_time_s + 62 * copy);
  CHECK(slow.communication.at("offload").exposed_s > 0.5 * 32 * copy);
}

TEST_CASE("Activation offloading refuses what ptsim does not model", "[config][offload]") {
  const auto m = test::shipped_model("mixtral-8x7b");
  config::StrategyInput st = mixtral("moe_act,fused_group_mlp");
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("combines fused_group_mlp"));
  st.offload_modules = "core_attn";
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("does not model"));
  st.offload_modules.reset();
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("none is given"));
  st.offload_modules = "moe_act";
  st.recompute = "full";
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("full recomputation"));
  st.recompute.reset();
  st.activation_offloading.reset();
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("needs --fine-grained-activation-offloading"));
  config::StrategyInput dense = mixtral("moe_act");
  dense.ep.reset();
  CHECK_THROWS_WITH(config::resolve_run(test::shipped_model("llama3-8b"), dense),
                    Catch::Contains("the model has no experts"));
  // A profile without a host link figure cannot price the copies.
  CHECK_THROWS_WITH(run(mixtral("moe_act"), test::shipped_hardware("h100-sxm5-80gb")),
                    Catch::Contains("host_link_GBps"));
}

TEST_CASE("A launch line's offloading flags give the strategy's keys", "[config][offload]") {
  const auto launch = test::small_launch({"--fine-grained-activation-offloading", "--offload-modules", "expert_fc1",
                                          "moe_act", "--min-offloaded-tensor-size", "350000000"});
  CHECK(launch.strategy.activation_offloading == true);
  CHECK(launch.strategy.offload_modules == "expert_fc1,moe_act");
  CHECK(launch.strategy.min_offloaded_tensor_size == 350000000);
  CHECK(launch.not_modelled.empty());
}

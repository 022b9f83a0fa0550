// Software stack files (configs/stacks/, schema ptsim-stack/1): each shipped
// stack loads with evidence for every setting; malformed stacks are refused
// naming the key; a stack lies beneath the strategy a run gives.
#include <filesystem>

#include "ptsim/common/error.hpp"
#include "ptsim/config/load_software.hpp"
#include "ptsim/config/load_stack.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

config::SoftwareStack shipped(const std::string& name) {
  return config::load_stack(test::source_path("configs/stacks/" + name + ".json"), test::unchecked_inputs());
}

}  // namespace

TEST_CASE("Every shipped stack loads, each setting and its schedules with evidence", "[config][stack]") {
  int stacks = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::source_path("configs/stacks"))) {
    if (entry.path().extension() != ".json") continue;
    const auto s = config::load_stack(entry.path().string(), test::unchecked_inputs());
    CHECK(s.name == entry.path().stem().string());  // --stack NAME finds the file of that name
    CHECK_FALSE(s.framework.empty());
    for (const auto& [key, text] : s.evidence) CHECK(text.size() > 40);  // a source, not a word
    ++stacks;
  }
  CHECK(stacks >= 5);
}

TEST_CASE("The Megatron-LM stacks hold what their papers' software ran", "[config][stack]") {
  // Narayanan et al. 2021's Megatron-LM: unfused attention, gradients
  // all-reduced after the backward, no distributed optimizer, 1F1B and
  // interleaved only.
  const auto m21 = shipped("megatron-lm-2021");
  CHECK(m21.settings.attention_backend == "unfused");
  CHECK(m21.settings.overlap_grad_reduce == false);
  CHECK(m21.settings.zero == 0);
  CHECK(m21.schedules == std::vector<std::string>{"1f1b", "interleaved"});
  // DeepSpeed 0.3's ZeRO-3 moves 16-bit gradients, one tensor at a time.
  const auto z3 = shipped("deepspeed-zero3-2021");
  CHECK(z3.settings.zero == 3);
  CHECK(z3.settings.zero3_blocking == true);
  CHECK(z3.settings.grad_reduce_in_bf16 == true);
}

TEST_CASE("torchtitan's stack runs PyTorch's bundled FlashAttention-2, FSDP2 and fp32 reductions", "[config][stack]") {
  // PyTorch's SDPA flash backend is FlashAttention-2 (FlashAttention-3 is not
  // bundled), on Hopper at its own rates: a torchtitan step's attention costs
  // what FlashAttention-2 costs, not the profiles' FlashAttention-3 figure.
  const auto t = shipped("torchtitan-2024-12");
  CHECK(t.settings.attention_backend == "flash2");
  CHECK(t.settings.fsdp == "fsdp2");
  CHECK(t.settings.grad_reduce_in_bf16 == false);
}

TEST_CASE("A stack lies beneath the run's strategy, and marks what it gave", "[config][stack]") {
  const auto m21 = shipped("megatron-lm-2021");
  config::StrategyInput given;
  given.attention_backend = "flash";
  given.origin["attention_backend"] = "--attention-backend";
  const auto s = config::apply_stack(m21, given);
  CHECK(s.attention_backend == "flash");  // the flag wins
  CHECK(s.origin.at("attention_backend") == "--attention-backend");
  CHECK(s.overlap_grad_reduce == false);  // the stack fills the rest
  CHECK(s.origin.at("overlap_grad_reduce") == "stack megatron-lm-2021: overlap_grad_reduce");
  given.schedule = "zb-h1";
  CHECK_THROWS_WITH(config::apply_stack(m21, given), Catch::Contains("cannot run it; it runs 1f1b, interleaved"));
}

TEST_CASE("Malformed stacks are refused with the key, the rule and the fix", "[config][stack]") {
  const auto load = [](const std::string& name, const std::string& text) {
    return config::load_stack(test::write_scratch(name, text), test::unchecked_inputs());
  };
  CHECK_THROWS_WITH(load("no-evidence.json", R"({"schema": "ptsim-stack/1", "name": "x", "framework": "f",
      "settings": {"overlap_grad_reduce": true}, "evidence": {}})"),
                    Catch::Contains("/evidence has no entry for \"overlap_grad_reduce\""));
  CHECK_THROWS_WITH(load("stray-evidence.json", R"({"schema": "ptsim-stack/1", "name": "x", "framework": "f",
      "settings": {}, "evidence": {"zero": "a source that names the file and the commit it read"}})"),
                    Catch::Contains("/evidence/zero is evidence for a setting the stack does not give"));
  CHECK_THROWS_WITH(load("layout.json", R"({"schema": "ptsim-stack/1", "name": "x", "framework": "f",
      "settings": {"tensor_model_parallel_size": 8}, "evidence": {"tensor_model_parallel_size": "t"}})"),
                    Catch::Contains("not the run's layout"));
  CHECK_THROWS_WITH(load("schedule.json", R"({"schema": "ptsim-stack/1", "name": "x", "framework": "f",
      "settings": {}, "schedules": ["1f1b", "wave"], "evidence": {"schedules": "s"}})"),
                    Catch::Contains("/schedules holds \"wave\", not a schedule"));
  CHECK_THROWS_WITH(load("key.json", R"({"schema": "ptsim-stack/1", "name": "x", "framework": "f",
      "settings": {}, "evidence": {}, "kernels": "eager"})"),
                    Catch::Contains("kernels"));
  CHECK_THROWS_WITH(load("schema.json", R"({"schema": "ptsim-software/1", "name": "x", "framework": "f",
      "settings": {}})"),
                    Catch::Contains("ptsim-stack/1"));
}

TEST_CASE("validation/software.json's sources take their framework's stack beneath their own settings",
          "[config][stack]") {
  const auto software = config::load_software(test::source_path("validation/software.json"), test::unchecked_inputs());
  const auto* n21 = config::software_for(software, "narayanan21-t1-gpt-1.7b");
  REQUIRE(n21 != nullptr);
  CHECK(n21->stack == "megatron-lm-2021");
  CHECK(n21->settings.attention_backend == "unfused");
  CHECK(n21->settings.batch_p2p_sync == true);
  const auto* z3 = config::software_for(software, "narayanan21-t2-zero3-gpt-530b-640");
  REQUIRE(z3 != nullptr);
  CHECK(z3->stack == "deepspeed-zero3-2021");
  CHECK(z3->settings.zero3_blocking == true);
  const auto* readme = config::software_for(software, "megatron-readme-h100-gpt-70b");
  REQUIRE(readme != nullptr);
  CHECK(readme->stack == "megatron-core");
  CHECK(readme->settings.attention_backend == "cudnn");  // the source's own, over the stack
}

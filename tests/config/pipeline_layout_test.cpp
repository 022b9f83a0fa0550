// Megatron-Core's --pipeline-model-parallel-layout: expansion, the layer
// counts it gives each virtual stage, and every refusal.
#include "ptsim/config/pipeline_layout.hpp"

#include <string>
#include <vector>

#include "ptsim/common/error.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "test_support.hpp"

using namespace ptsim;

TEST_CASE("Pipeline layouts expand as Megatron-Core expands them", "[config][pipeline]") {
  using V = std::vector<std::string>;
  // Groups first, then single repeats, commas dropped; "(t|)*2" leaves its
  // trailing bar, so the next stage starts after it.
  CHECK(config::expand_pipeline_layout("Ettt|(tt|)*2,t|L") == V{"Ettt", "tt", "tt", "t", "L"});
  CHECK(config::expand_pipeline_layout("Et*3|t*4|t*4|t*3L") == V{"Ettt", "tttt", "tttt", "tttL"});
  CHECK(config::expand_pipeline_layout("(|t)*2,|L") == V{"", "t", "t", "L"});
  CHECK_THROWS_WITH(config::expand_pipeline_layout("Et*2|x|tL"),
                    Catch::Contains("'x' (in \"Ett|x|tL\" once groups and counts are unrolled, position 5) is not a layer"));
  CHECK_THROWS_WITH(config::expand_pipeline_layout("Et|(tt|)|tL"), Catch::Contains("'(' "));
  CHECK_THROWS_WITH(config::expand_pipeline_layout(" , "), Catch::Contains("is empty"));
  // Repeats are bounded: a layout names each layer once.
  CHECK_THROWS_WITH(config::expand_pipeline_layout("E(t*999999|)*999999L"), Catch::Contains("expands to more than"));
  CHECK_THROWS_WITH(config::expand_pipeline_layout("Et*1234567L"), Catch::Contains("the count 1234567 is too large"));
}

TEST_CASE("Megatron-Bridge's Llama 3 70B layout gives 40 virtual stages, one of three layers", "[config][pipeline]") {
  // perf_recipes llama3_70b ..._h100_fp8cs: pp 8, vp 5, 80 layers; the loss
  // alone with one layer on the last virtual stage.
  const auto layers = config::pipeline_layout_layers("Et*2|(t*2|)*34,t*3|(t*2|)*3,tL", 80, 8);
  REQUIRE(layers.size() == 40);
  std::vector<std::int64_t> expected(40, 2);
  expected[35] = 3;
  expected[39] = 1;
  CHECK(layers == expected);
}

TEST_CASE("Pipeline layouts that Megatron or ptsim cannot run are refused with the rule", "[config][pipeline]") {
  const auto refuses = [](const std::string& layout, std::int64_t layers, std::int64_t pp, const std::string& text) {
    INFO(layout);
    CHECK_THROWS_WITH(config::pipeline_layout_layers(layout, layers, pp), Catch::Contains(text));
  };
  refuses("Et*3|t*4|t*4L", 12, 2, "has 3 virtual stages, not a multiple of pp = 2");
  refuses("t*4|Et*4", 8, 2, "must begin with the embedding, E");
  refuses("Et*4|EtttL", 8, 2, "must begin with the embedding, E, and name it once");
  refuses("Et*4|t*4", 8, 2, "must end with the loss, L");
  refuses("Et*4|t*3L", 8, 2, "places 7 transformer layers where the model has num_layers = 8");
  refuses("Et*8|L", 8, 2, "leaves virtual stage 1 (\"L\") without a transformer layer");
  refuses("Et*4|t*4mL", 8, 2, "places 1 MTP layers (m) where the model has mtp_num_layers = 0");
  // With MTP: one m a depth, on the last virtual stage with the loss
  // (Megatron-Bridge's DeepSeek-V3 GB300 layout ends "tmL").
  CHECK(config::pipeline_layout_layers("Et*4|t*4mL", 8, 2, 1) == std::vector<std::int64_t>{4, 4});
  CHECK_THROWS_WITH(config::pipeline_layout_layers("Et*4m|t*4L", 8, 2, 1),
                    Catch::Contains("places the MTP layers (m) away from the loss"));
  CHECK_THROWS_WITH(config::pipeline_layout_layers("Et*4|t*4L", 8, 2, 1),
                    Catch::Contains("places 0 MTP layers (m) where the model has mtp_num_layers = 1"));
}

TEST_CASE("A layout sets the layers of each virtual stage and the chunks per stage", "[config][pipeline]") {
  const auto gpt3 = test::shipped_model("gpt3-175b");  // 96 layers
  config::StrategyInput s;
  s.gpus = 64;
  s.tp = 8;
  s.pp = 4;
  s.global_batch_size = 16;
  s.pipeline_layout = "Et*20|t*26|t*26|t*24L";
  auto run = config::resolve_run(gpt3, s);
  CHECK(run.parallel.virtual_stage_layers == std::vector<std::int64_t>{20, 26, 26, 24});
  CHECK(run.parallel.vpp == 1);
  CHECK(run.parallel.schedule == strategy::ScheduleKind::OneFOneB);
  // Eight stages over pp 4: two chunks a stage, the interleaved schedule.
  s.pipeline_layout = "E(t*12|)*7,t*12L";
  run = config::resolve_run(gpt3, s);
  CHECK(run.parallel.vpp == 2);
  CHECK(run.parallel.schedule == strategy::ScheduleKind::Interleaved);
  CHECK(run.parallel.virtual_stage_layers == std::vector<std::int64_t>(8, 12));
  s.vpp = 3;
  CHECK_THROWS_WITH(config::resolve_run(gpt3, s),
                    Catch::Contains("contradicts --pipeline-model-parallel-layout, whose 8 stages over pp = 4 give 2"));
  s.vpp.reset();
  s.first_stage_layers = 12;
  CHECK_THROWS_WITH(config::resolve_run(gpt3, s), Catch::Contains("places every layer, so --decoder-first-pipeline-num-layers cannot also be given"));
  s.first_stage_layers.reset();
  s.schedule = "dualpipe";
  s.pipeline_layout = "Et*24|t*24|t*24|t*24L";
  CHECK_THROWS_WITH(config::resolve_run(gpt3, s), Catch::Contains("cannot place DualPipe's two chunks per stage"));
  s.schedule.reset();
  s.pp = 1;
  s.pipeline_layout = "Et*96L";
  CHECK_THROWS_WITH(config::resolve_run(gpt3, s), Catch::Contains("needs pipeline parallelism"));
}

TEST_CASE("A layout equal to the even split simulates the same step, and a lopsided one follows its slowest stage",
          "[simulate][pipeline]") {
  // 8 equal layers over 2 stages, 1F1B, 8 micro-batches, free network, a
  // vocabulary too small to matter. Per layer a forward of 1 unit and a
  // backward of r: evenly (4 + 4) the step is (m + p − 1)·4(1 + r) =
  // 36(1 + r). With 6 + 2 the first stage never waits (the second returns
  // each gradient within one of the first stage's passes for r ≥ 1/2) and
  // sets the pace alone: m·6(1 + r) = 48(1 + r), 4/3 of the even step.
  const auto hw = test::free_network(test::shipped_hardware("a100-sxm4-80gb"));
  auto m = test::shipped_model("gpt3-175b");
  m.num_layers = 8;
  m.vocab_size = 256;
  config::StrategyInput s;
  s.gpus = 2;
  s.pp = 2;
  s.global_batch_size = 8;
  s.host_overhead_us = 0;
  // The optimizer step, which grows with the first stage's layers, is left
  // out (it follows the passes); the embedding and the loss are in, though
  // outside the closed form.
  const auto passes = [&] {
    const auto r = test::simulate(m, hw, s).result;
    return r.step_time_s - r.breakdown.optimizer_s;
  };
  const double even = passes();
  s.pipeline_layout = "Et*4|t*4L";
  CHECK(passes() == even);
  s.pipeline_layout = "Et*6|t*2L";
  CHECK(passes() / even == Approx(48.0 / 36.0).epsilon(0.01));
}

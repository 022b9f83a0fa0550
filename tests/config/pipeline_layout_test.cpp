// Megatron-Core's --pipeline-model-parallel-layout: expansion, the layer
// counts it gives each virtual stage, and every refusal.
#include "ptsim/config/pipeline_layout.hpp"

#include <string>
#include <vector>

#include "ptsim/common/error.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

// 8 equal layers of GPT-3 175B over 2 stages, 1F1B, 8 micro-batches, free
// network, no host time, a vocabulary too small to matter.
struct TwoStages {
  hardware::HardwareProfile hw = test::free_network(test::shipped_hardware("a100-sxm4-80gb"));
  model::ModelSpec m = [] {
    auto gpt = test::shipped_model("gpt3-175b");
    gpt.num_layers = 8;
    gpt.vocab_size = 256;
    return gpt;
  }();
  config::StrategyInput s = [] {
    config::StrategyInput two;
    two.gpus = 2;
    two.pp = 2;
    two.global_batch_size = 8;
    two.host_overhead_us = 0;
    return two;
  }();
  // The step less the optimizer, which grows with the first stage's layers
  // and follows the passes; the embedding and the loss are in.
  double passes() const {
    const auto r = test::simulate(m, hw, s).result;
    return r.step_time_s - r.breakdown.optimizer_s;
  }
};

}  // namespace

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
  refuses("Et*4||t*4L", 8, 3, "leaves virtual stage 1 (\"\") without a transformer layer, the embedding or the loss");
  // The embedding or the loss may make a stage alone, as Megatron builds it.
  CHECK(config::pipeline_layout_layers("Et*8|L", 8, 2) == std::vector<std::int64_t>{8, 0});
  CHECK(config::pipeline_layout_layers("E|t*8L", 8, 2) == std::vector<std::int64_t>{0, 8});
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
  TwoStages t;
  const double even = t.passes();
  t.s.pipeline_layout = "Et*4|t*4L";
  CHECK(t.passes() == even);
  t.s.pipeline_layout = "Et*6|t*2L";
  CHECK(t.passes() / even == Approx(48.0 / 36.0).epsilon(0.01));
}

TEST_CASE("The embedding and the loss counted as layers split the places as Megatron-Core does", "[config][pipeline]") {
  // transformer_block.py get_num_layers_to_build: (num_layers + 1 + 1) over
  // pp·vpp virtual stages, one fewer on the first and on the last.
  auto m = test::shipped_model("llama3-405b");  // 126 layers
  config::StrategyInput s;
  s.gpus = 64;
  s.pp = 16;
  s.vpp = 8;
  s.global_batch_size = 128;
  s.account_for_embedding = true;
  s.account_for_loss = true;
  // 128 places over 128 virtual stages: the embedding alone, 126 of one
  // layer, the loss alone (Megatron-Bridge's Llama 3.1 405B GB200 recipes).
  std::vector<std::int64_t> expected(128, 1);
  expected.front() = 0;
  expected.back() = 0;
  CHECK(config::resolve_run(m, s).parallel.virtual_stage_layers == expected);
  // The embedding alone: 11 layers + 1 over 4 stages is 3 places each.
  m.num_layers = 11;
  s.pp = 4;
  s.vpp.reset();
  s.account_for_loss.reset();
  s.gpus = 4;
  CHECK(config::resolve_run(m, s).parallel.virtual_stage_layers == std::vector<std::int64_t>{2, 3, 3, 3});
  // Without the flag ptsim's own split puts the extra layers inside.
  s.account_for_embedding.reset();
  CHECK(config::resolve_run(m, s).parallel.virtual_stage_layers == std::vector<std::int64_t>{3, 3, 3, 2});
  // Megatron's asserts: the places divide over the stages and the chunks.
  s.account_for_embedding = true;
  s.pp = 5;
  s.gpus = 5;
  CHECK_THROWS_WITH(config::resolve_run(m, s),
                    Catch::Contains("--account-for-embedding-in-pipeline-split splits num_layers = 11 + 1 (embedding), "
                                    "12 places, which pp = 5 does not divide"));
  s.pp = 2;
  s.gpus = 2;
  s.vpp = 4;
  CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains("leaves 6 places a stage"));
  s.vpp.reset();
  s.first_stage_layers = 5;
  CHECK_THROWS_WITH(config::resolve_run(m, s),
                    Catch::Contains("cannot be combined with --decoder-first-pipeline-num-layers"));
  s.first_stage_layers.reset();
  s.pipeline_layout = "Et*5|t*6L";
  CHECK_THROWS_WITH(config::resolve_run(m, s),
                    Catch::Contains("places every layer, so --account-for-embedding-in-pipeline-split cannot"));
}

TEST_CASE("A stage holding the embedding alone runs, and the stage after it sets the pace", "[simulate][pipeline]") {
  // As the even-split case above: 8 layers, 2 stages, 1F1B, 8 micro-batches.
  // All 8 layers on the second stage: it never waits after its first
  // micro-batch and takes m·8(1 + r) = 64(1 + r), against 36(1 + r) evenly.
  TwoStages t;
  auto& [hw, m, s] = t;
  const double even = t.passes();
  s.pipeline_layout = "E|t*8L";
  CHECK(t.passes() / even == Approx(64.0 / 36.0).epsilon(0.01));
  // Interleaved, the embedding and the loss each alone on a chunk
  // (6 layers + 2 places over 2 × 4 virtual stages): the model's FLOPs are
  // the step's whatever the split.
  m.num_layers = 6;
  s.pipeline_layout.reset();
  s.schedule = "interleaved";
  s.vpp = 4;
  s.global_batch_size = 4;
  s.account_for_embedding = true;
  s.account_for_loss = true;
  CHECK(config::resolve_run(m, s).parallel.virtual_stage_layers == std::vector<std::int64_t>{0, 1, 1, 1, 1, 1, 1, 0});
  const auto placed = test::simulate(m, hw, s);
  s.account_for_embedding.reset();
  s.account_for_loss.reset();
  s.vpp = 3;
  const auto even_split = test::simulate(m, hw, s);
  CHECK(placed.result.model_flops_per_step == Approx(even_split.result.model_flops_per_step).epsilon(1e-12));
}

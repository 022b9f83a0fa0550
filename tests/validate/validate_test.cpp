// Published runs, the software profiles of their sources, the choice of
// unpublished values, and the validation table.
#include <filesystem>

#include "ptsim/common/error.hpp"
#include "ptsim/config/load_runs.hpp"
#include "ptsim/config/load_software.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "ptsim/plan/search.hpp"
#include "ptsim/simulate/simulate_step.hpp"
#include "ptsim/validate/validate.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

const char* kTinyRun = R"({"schema": "ptsim-runs/1", "runs": [
  {"id": "tiny-a", "source": "test", "hardware": "a100-sxm4-80gb", "num_gpus": 8,
   "model": {"name": "tiny", "num_layers": 4, "hidden_size": 1024, "num_attention_heads": 16,
             "vocab_size": 1024, "seq_length": 512},
   "parallel": {"tp": 2, "pp": 2, "dp": 2, "cp": 1, "ep": 1, "vpp": null, "sequence_parallel": false,
                "recompute": "none", "zero": 0, "schedule": "1f1b"},
   "batch": {"global_batch_size": 16, "micro_batch_size": null},
   "precision": "bf16", "measured": {"step_time_s": 0.05, "derived_from": "made up for the test"}}]})";

}  // namespace

TEST_CASE("The shipped published runs load, with their unpublished fields named", "[validate]") {
  const auto runs = config::load_runs(test::source_path("validation/published_runs.json"), test::unchecked_inputs());
  REQUIRE(runs.runs.size() == 25);
  const auto& first = runs.runs.front();
  CHECK(first.id == "narayanan21-t1-gpt-1.7b");
  CHECK(first.model.num_layers == 24);
  CHECK(*first.strategy.gpus == 32);
  CHECK(first.measured_step_time_s == Approx(3.528));
  const auto open = first.unpublished;
  CHECK(std::find(open.begin(), open.end(), "micro_batch_size") != open.end());
  CHECK(std::find(open.begin(), open.end(), "vpp") != open.end());
  CHECK(std::find(open.begin(), open.end(), "tp") == open.end());
}

TEST_CASE("A run's precision mxfp8 is FP8 under the MXFP8 recipe, which the software file cannot change",
          "[validate][fp8]") {
  std::string mx = kTinyRun;
  mx.replace(mx.find("\"bf16\""), 6, "\"mxfp8\"");
  const auto runs = config::load_runs(test::write_scratch("r-mx.json", mx), test::unchecked_inputs());
  REQUIRE(runs.runs.size() == 1);
  CHECK(*runs.runs[0].strategy.precision == "fp8");
  CHECK(*runs.runs[0].strategy.fp8_recipe == "mxfp8");
  std::string fp4 = kTinyRun;
  fp4.replace(fp4.find("\"bf16\""), 6, "\"nvfp4\"");
  CHECK(
      *config::load_runs(test::write_scratch("r-fp4.json", fp4), test::unchecked_inputs()).runs[0].strategy.precision ==
      "nvfp4");
  std::string bad = kTinyRun;
  bad.replace(bad.find("\"bf16\""), 6, "\"fp6\"");
  CHECK_THROWS_WITH(config::load_runs(test::write_scratch("r-fp6.json", bad), test::unchecked_inputs()),
                    Catch::Contains("precision") && Catch::Contains("mxfp8"));
}

TEST_CASE("Malformed run and software files are refused with the key", "[validate]") {
  CHECK_THROWS_WITH(config::load_runs(test::write_scratch("r1.json", R"({"schema": "x", "runs": []})"),
                                      test::unchecked_inputs()),
                    Catch::Contains("expected \"ptsim-runs/1\""));
  std::string bad = kTinyRun;
  bad.replace(bad.find("\"precision\""), 11, "\"precisionn\"");
  CHECK_THROWS_WITH(config::load_runs(test::write_scratch("r2.json", bad), test::unchecked_inputs()),
                    Catch::Contains("unknown key 'precisionn' in /runs/0"));
  CHECK_THROWS_WITH(config::load_software(test::write_scratch("s1.json", R"({"schema": "ptsim-software/1", "sources": [
                      {"runs": "x-", "framework": "f", "settings": {"attention_backend": "fast"}, "evidence": ["e"]}]})"),
                                          test::unchecked_inputs()),
                    Catch::Contains("/sources/0/settings/attention_backend"));
}

TEST_CASE("Software profiles fill what a run did not publish, by the longest id prefix", "[validate]") {
  const auto sw = config::load_software(test::source_path("validation/software.json"), test::unchecked_inputs());
  const auto* n = config::software_for(sw, "narayanan21-t1-gpt-1.7b");
  REQUIRE(n != nullptr);
  CHECK(*n->settings.attention_backend == "unfused");
  CHECK(config::software_for(sw, "someone-else") == nullptr);
}

TEST_CASE("Candidates cover the open fields and the search takes the fastest that fits", "[validate][plan]") {
  const auto m = test::shipped_model("gpt3-175b");
  config::StrategyInput s;
  s.gpus = 512;
  s.tp = 8;
  s.pp = 8;
  s.global_batch_size = 512;  // 64 sequences per replica
  s.schedule = "interleaved";
  const auto c = plan::candidates(m, s, {"micro_batch_size", "vpp", "recompute"});
  // micro-batch 1..16 (5) × vpp dividing 12 layers per stage: 2, 3, 4, 6, 12 (5; Megatron allows a layer a
  // chunk) × recompute: none, selective, full, and full for the first 1..11 layers of each chunk (14).
  CHECK(c.size() == 5 * 5 * 14);
  CHECK(c.front().level == 0);
  CHECK(c.back().level == 2);
  CHECK_THROWS_WITH(plan::candidates(m, s, {"tp"}), Catch::Contains("tp is not published and ptsim does not choose it"));

  // GPT-3 175B on 64 GPUs with TP 8 and PP 8 does not fit without
  // recomputation at micro-batch 4, and fits with full recomputation.
  config::StrategyInput small;
  small.gpus = 64;
  small.tp = 8;
  small.pp = 8;
  small.global_batch_size = 32;
  small.micro_batch_size = 4;
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");
  const auto r = plan::fastest_fitting(m, hw, plan::candidates(m, small, {"recompute"}));
  REQUIRE(r.best);
  CHECK(r.fits);
  CHECK(r.best->candidate.chosen.at("recompute") != "none");
  CHECK(r.best->result.memory.fits);

  // Recomputing fewer layers is faster, so the search keeps the fewest that
  // fit: with N layers of each 12-layer stage recomputed it fits, with N − 1
  // it does not (N = 1 needs no such check), and every layer recomputed is slower.
  REQUIRE(r.best->candidate.chosen.at("recompute") == "full");
  REQUIRE(r.best->candidate.chosen.contains("recompute_num_layers"));
  const std::int64_t n = std::stoll(r.best->candidate.chosen.at("recompute_num_layers"));
  const auto simulate_with = [&](std::optional<std::int64_t> layers) {
    config::StrategyInput x = small;
    x.recompute = "full";
    x.recompute_num_layers = layers;
    const auto run = config::resolve_run(m, x);
    return simulate::simulate_step({run.model, hw, run.parallel, simulate::Mode::Auto, {}, {}}).result;
  };
  if (n > 1) CHECK_FALSE(simulate_with(n - 1).memory.fits);
  CHECK(simulate_with(std::nullopt).step_time_s > r.best->result.step_time_s);
}

TEST_CASE("When nothing fits, the search takes the least memory, and the fastest of those needing it",
          "[validate][plan]") {
  // Llama 3 405B on 16,384 H100s as Meta ran it (TP 8, PP 16, 16 sequences of
  // 8,192 tokens a replica, no recomputation): 16 micro-batches over 16
  // stages cap every interleaving depth's warm-up alike, so each depth needs
  // the same memory, more than an 80 GB GPU has.
  const auto m = test::shipped_model("llama3-405b");
  config::StrategyInput s;
  s.gpus = 16384;
  s.tp = 8;
  s.pp = 16;
  s.global_batch_size = 2048;
  s.micro_batch_size = 1;
  s.seq_length = 8192;
  s.sequence_parallel = true;
  s.zero = 1;
  s.recompute = "none";
  s.schedule = "interleaved";
  const auto hw = test::shipped_hardware("h100-roce-llama3");
  const auto candidates = plan::candidates(m, s, {"vpp"});
  REQUIRE(candidates.size() >= 3);
  const auto r = plan::fastest_fitting(m, hw, candidates);
  REQUIRE(r.best);
  CHECK_FALSE(r.fits);
  for (const auto& c : candidates) {
    const auto run = config::resolve_run(m, c.strategy);
    const auto other = simulate::simulate_step({run.model, hw, run.parallel, simulate::Mode::Auto, {}, {}}).result;
    CHECK_FALSE(other.memory.fits);
    CHECK(other.memory.peak_bytes == r.best->result.memory.peak_bytes);
    CHECK(other.step_time_s >= r.best->result.step_time_s);
  }
  CHECK(r.best->candidate.chosen.at("vpp") != candidates.front().chosen.at("vpp"));  // not merely the first
}

TEST_CASE("Uneven stages interleave with any depth that leaves a layer per virtual stage", "[validate][plan]") {
  // Llama 3 405B: 126 layers over 16 stages (7 + 14 × 8 + 7), interleaved as
  // Meta ran it. Equal chunks are impossible, so every v ≤ 8 with 16·v ≤ 126
  // virtual stages is a candidate: 2 to 7.
  const auto m = test::shipped_model("llama3-405b");
  config::StrategyInput s;
  s.gpus = 8192;
  s.tp = 8;
  s.pp = 16;
  s.global_batch_size = 2048;
  s.micro_batch_size = 1;
  s.schedule = "interleaved";
  const auto c = plan::candidates(m, s, {"vpp"});
  std::vector<std::string> depths;
  for (const auto& x : c) depths.push_back(x.chosen.at("vpp"));
  CHECK(depths == std::vector<std::string>{"2", "3", "4", "5", "6", "7"});
  // Virtual stage k runs on stage k mod 16; every layer is placed once.
  for (const auto& x : c) {
    const auto run = config::resolve_run(m, x.strategy);
    const auto v = run.parallel.vpp;
    INFO("vpp " << v);
    std::vector<std::int64_t> per_stage(16, 0);
    for (std::size_t k = 0; k < run.parallel.virtual_stage_layers.size(); ++k)
      per_stage[k % 16] += run.parallel.virtual_stage_layers[k];
    CHECK(per_stage.front() <= 8);
    CHECK(per_stage.back() <= 8);
    if (v == 2) {  // 32 virtual stages of 4 layers but the first and the last, of 3: Meta's 7 + 14 × 8 + 7
      std::vector<std::int64_t> meta(16, 8);
      meta.front() = meta.back() = 7;
      CHECK(per_stage == meta);
    }
    std::int64_t total = 0;
    for (const auto n : per_stage) total += n;
    CHECK(total == 126);
  }
  // With stages of equal size Megatron's rule stands: v divides a stage's
  // layers, down to one layer a chunk (NVIDIA's recipes run 10 and 20 chunks).
  s.pp = 14;  // 9 layers a stage
  s.gpus = 8 * 14 * 64;
  std::vector<std::string> even;
  for (const auto& x : plan::candidates(m, s, {"vpp"})) even.push_back(x.chosen.at("vpp"));
  CHECK(even == std::vector<std::string>{"3", "9"});
  s.pp = 4;  // GPT-175B's 96 layers over 4 stages: 24 a stage
  const auto gpt = test::shipped_model("gpt3-175b");
  std::vector<std::string> gpt_depths;
  for (const auto& x : plan::candidates(gpt, s, {"vpp"})) gpt_depths.push_back(x.chosen.at("vpp"));
  CHECK(gpt_depths == std::vector<std::string>{"2", "3", "4", "6", "8", "12", "24"});
}

TEST_CASE("Validation compares the simulated step with the measured one", "[validate]") {
  config::InputFiles read;
  const std::string runs_path = test::write_scratch("tiny-runs.json", kTinyRun);
  const auto runs = config::load_runs(runs_path, read);
  const auto report = validate::validate_runs(runs, validate::profiles_in(test::source_path("hw_profiles"), read), {});
  // Every file read is recorded for the output writers, the profile the run
  // names as well as the run file.
  const std::string profile_path =
      (std::filesystem::path(test::source_path("hw_profiles")) / "a100-sxm4-80gb.json").string();
  CHECK(read.paths() == std::vector<std::string>{runs_path, profile_path});
  REQUIRE(report.runs.size() == 1);
  const auto& r = report.runs[0];
  REQUIRE(r.predicted_s);
  CHECK(r.error_pct == Approx((*r.predicted_s - 0.05) / 0.05 * 100));
  CHECK(r.chosen.count("micro_batch_size") == 1);
  CHECK(report.summary.count == 1);
  CHECK(report.summary.median_abs_error_pct == Approx(std::abs(r.error_pct)));
  // A missing profile is a failure with the reason, not a crash.
  std::string other = kTinyRun;
  other.replace(other.find("a100-sxm4-80gb"), 14, "no-such-gpu-xx");
  const auto failed = validate::validate_runs(config::load_runs(test::write_scratch("tiny-runs2.json", other), read),
                                              validate::profiles_in(test::source_path("hw_profiles"), read), {});
  CHECK(failed.failures == 1);
  CHECK_THAT(failed.runs[0].failure, Catch::Contains("hardware profile 'no-such-gpu-xx' not found"));
}

TEST_CASE("Summary statistics of absolute errors", "[validate]") {
  std::vector<validate::RunCheck> rows(4);
  const double errors[] = {-10, 2, 4, 30};
  for (std::size_t i = 0; i < 4; ++i) {
    rows[i].predicted_s = 1;
    rows[i].error_pct = errors[i];
  }
  const auto s = validate::summarize(rows);
  CHECK(s.count == 4);
  CHECK(s.median_abs_error_pct == Approx(7));
  CHECK(s.mean_abs_error_pct == Approx(11.5));
  CHECK(s.max_abs_error_pct == Approx(30));
}

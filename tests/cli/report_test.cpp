// ptsim report and ptsim sweep end to end: their arithmetic (steps, time to
// train, GPU-hours, cost, energy) by hand from the step time, their best
// strategy against ptsim plan's, and the what-if overrides.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/run_binary.hpp"

namespace {

using ptsim::test::run_ptsim;
using ptsim::test::scratch_path;
using ptsim::test::slurp;
using ptsim::test::source_path;

const std::string kTiny = source_path("configs/models/tiny.json");
const std::string kA100 = source_path("hw_profiles/a100-sxm4-80gb.json");

// ptsim plan's best step time: the independent route to the number that
// report and sweep must agree with.
double plan_best(const std::string& hw, int gpus, int batch, const std::string& extra = "") {
  const std::string json = scratch_path("plan-best.json");
  const auto r = run_ptsim("plan --model " + kTiny + " --hw " + hw + " --gpus " + std::to_string(gpus) +
                           " --global-batch-size " + std::to_string(batch) + " --top 1 -q --json " + json + extra);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(slurp(json)).at("candidates").at(0).at("step_time_s").get<double>();
}

}  // namespace

namespace {

// The timeline's window against its closed form for the fastest point: about
// four micro-batches (4/m of the step, plus 2%) centred on the middle of the
// step, m = global batch / (micro-batch · dp); every event starts inside it.
// Returns the window's start.
double check_timeline_window(const nlohmann::json& j) {
  const nlohmann::json* fastest = nullptr;
  for (const auto& p : j.at("points"))
    if (p.at("fits").get<bool>() &&
        (fastest == nullptr || p.at("step_time_s").get<double>() < fastest->at("step_time_s").get<double>()))
      fastest = &p;
  REQUIRE(fastest != nullptr);
  const auto& s = fastest->at("strategy");
  const double step = fastest->at("step_time_s").get<double>();
  const double m = s.at("global_batch_size").get<double>() /
                   (s.at("micro_batch_size").get<double>() * s.at("data_parallel_size").get<double>());
  const double width = std::min(step, 4 * step / m + 0.02 * step);
  const auto& t = j.at("timeline");
  const double begin = t.at("window_s").at(0).get<double>();
  const double end = t.at("window_s").at(1).get<double>();
  CHECK(begin == Approx(std::max(0.0, step / 2 - width / 2)).margin(1e-12));
  CHECK(end <= begin + width + 1e-12);
  CHECK(end > begin);
  REQUIRE_FALSE(t.at("ranks").empty());
  for (const auto& rank : t.at("ranks"))
    for (const auto& e : rank.at("events")) {
      CHECK(e.at("start_s").get<double>() >= begin);
      CHECK(e.at("start_s").get<double>() < end);
      CHECK(e.at("end_s").get<double>() >= e.at("start_s").get<double>());
    }
  return begin;
}

}  // namespace

TEST_CASE("ptsim report turns each scale's best step into days, GPU-hours, cost and energy", "[cli][report]") {
  const std::string dir = scratch_path("report-arith");
  std::filesystem::remove_all(dir);
  // 5 GPUs: no tp (8 heads), dp (16 sequences) or cp (128 tokens) divides
  // evenly and a pipeline cannot have more stages (5) than layers (4).
  const auto r = run_ptsim("report -q --no-render --model " + kTiny + " --hw " + kA100 +
                           " --tokens 1e9 --gpus 5,4,8 --global-batch-size 16 --days 1"
                           " --price-per-gpu-hour 2.5 --gpu-power-watts 400 --out " + dir);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(dir + "/report.json"));
  CHECK(j.at("schema").get<std::string>() == "ptsim-capacity-report/1");
  // 1e9 tokens in steps of 16 × 128 = 2048 tokens: 488281.25, so 488282 steps.
  const auto& points = j.at("points");
  REQUIRE(points.size() == 3);
  CHECK_FALSE(points[0].at("fits").get<bool>());
  CHECK_THAT(points[0].at("reason").get<std::string>(), Catch::Contains("no valid strategy"));
  for (std::size_t i = 1; i < 3; ++i) {
    const auto& p = points[i];
    const int gpus = p.at("gpus").get<int>();
    INFO(gpus << " GPUs");
    REQUIRE(p.at("fits").get<bool>());
    CHECK(p.at("steps").get<std::int64_t>() == 488282);
    const double step = p.at("step_time_s").get<double>();
    CHECK(step == Approx(plan_best(kA100, gpus, 16)).epsilon(1e-9));
    const double seconds = 488282 * step;
    CHECK(p.at("time_to_train_s").get<double>() == Approx(seconds).epsilon(1e-12));
    CHECK(p.at("time_to_train_days").get<double>() == Approx(seconds / 86400).epsilon(1e-12));
    const double gpu_hours = seconds * gpus / 3600;
    CHECK(p.at("gpu_hours").get<double>() == Approx(gpu_hours).epsilon(1e-12));
    CHECK(p.at("cost_usd").get<double>() == Approx(2.5 * gpu_hours).epsilon(1e-12));
    // 400 W × GPUs × seconds, in MWh (3.6e9 J).
    CHECK(p.at("energy_mwh").get<double>() == Approx(400.0 * gpus * seconds / 3.6e9).epsilon(1e-12));
    CHECK(p.at("meets_deadline").get<bool>() == (seconds <= 86400));
    double sum = 0;
    for (const auto& [k, v] : p.at("breakdown_s").items()) sum += v.get<double>();
    CHECK(sum == Approx(step).epsilon(1e-9));
    // One memory entry per pipeline stage of the chosen strategy.
    const auto pp = p.at("strategy").at("pipeline_model_parallel_size").get<std::size_t>();
    CHECK(p.at("stages").size() == pp);
  }
  check_timeline_window(j);
}

TEST_CASE("ptsim report --power-limit-w plans every profile under the limit and prices energy at it", "[cli][report]") {
  const std::string dir = scratch_path("report-power");
  std::filesystem::remove_all(dir);
  const auto r = run_ptsim("report -q --no-render --model " + kTiny + " --hw " + kA100 +
                           " --tokens 1e9 --gpus 4,8 --global-batch-size 16 --power-limit-w 300 --out " + dir);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(dir + "/report.json"));
  CHECK(j.at("power_limit_W").get<double>() == 300);
  // No --gpu-power-watts: a GPU held to 300 W draws at most that.
  CHECK(j.at("gpu_power_watts").get<double>() == 300);
  for (const auto& p : j.at("points")) {
    const int gpus = p.at("gpus").get<int>();
    INFO(gpus << " GPUs");
    REQUIRE(p.at("fits").get<bool>());
    CHECK(p.at("gpu").get<std::string>() == "A100-SXM4-80GB at 300 W");
    // ptsim plan --power-limit-w is the independent route to the step.
    const double step = p.at("step_time_s").get<double>();
    CHECK(step == Approx(plan_best(kA100, gpus, 16, " --power-limit-w 300")).epsilon(1e-9));
    CHECK(step > plan_best(kA100, gpus, 16));
    // 488,282 steps (1e9 tokens of 16 × 128) at 300 W a GPU, in MWh.
    CHECK(p.at("energy_mwh").get<double>() == Approx(300.0 * gpus * 488282 * step / 3.6e9).epsilon(1e-9));
  }
  // The bands are the GPU's, measured at its own limit.
  CHECK(j.at("validated_error").at("gpus").at(0).at("gpu").get<std::string>() == "A100-SXM4-80GB");
  // Refused: a draw above the limit, and a limit below the measured curve.
  const std::string base =
      "report -q --no-render --model " + kTiny + " --hw " + kA100 + " --tokens 1e9 --gpus 4 --out " + dir;
  const auto over = run_ptsim(base + " --power-limit-w 300 --gpu-power-watts 400");
  CHECK(over.code == 2);
  CHECK_THAT(over.err, Catch::Contains("at most 300 W"));
  const auto low = run_ptsim(base + " --power-limit-w 50");
  CHECK(low.code == 2);
  CHECK_THAT(low.err, Catch::Contains("--power-limit-w 50"));
}

TEST_CASE("ptsim report's timeline is a step's steady state, not its warm-up", "[cli][report]") {
  // 2048 sequences on 4 GPUs: 32 micro-batches of 16, so the window (about four
  // of them) sits inside the step, about its middle.
  const std::string dir = scratch_path("report-window");
  std::filesystem::remove_all(dir);
  const auto r = run_ptsim("report -q --no-render --model " + kTiny + " --hw " + kA100 +
                           " --tokens 1e9 --gpus 4 --global-batch-size 2048 --out " + dir);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(dir + "/report.json"));
  CHECK(check_timeline_window(j) > 0);
}

TEST_CASE("ptsim report renders report.md and a self-contained report.html", "[cli][report]") {
  const std::string dir = scratch_path("report-render");
  std::filesystem::remove_all(dir);
  const auto r = run_ptsim("report -q --model " + kTiny + " --hw " + kA100 +
                           " --tokens 1e9 --gpus 4,8 --global-batch-size 16 --out " + dir);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string html = slurp(dir + "/report.html");
  for (const char* id : {"plot-scaling", "plot-breakdown", "plot-memory", "plot-timeline"})
    CHECK_THAT(html, Catch::Contains(id));
  CHECK_THAT(html, Catch::Contains("data:image/png;base64,"));
  CHECK_THAT(slurp(dir + "/report.md"), Catch::Contains("tiny-gpt"));
}

TEST_CASE("ptsim report states each GPU's validated error band on every page", "[cli][report]") {
  // A bands file of its own: the A100's band as written, and the H100 (a
  // second profile of the report) absent from it, so not validated.
  const std::string bands = scratch_path("bands.json");
  {
    std::ofstream f(bands);
    f << R"({"schema": "ptsim-error-bands/1", "gpus": {"A100-SXM4-80GB": {"runs": 3,
          "median_abs_error_pct": 7.5, "min_error_pct": -9.25, "max_error_pct": 1.5,
          "runs_predicted_short": 2, "profiles": ["a100-sxm4-80gb"]}}})";
  }
  const std::string dir = scratch_path("report-bands");
  std::filesystem::remove_all(dir);
  const auto r = run_ptsim("report -q --model " + kTiny + " --hw " + kA100 + "," +
                           source_path("hw_profiles/h100-sxm5-80gb.json") +
                           " --tokens 1e9 --gpus 4 --global-batch-size 16 --error-bands " + bands + " --out " + dir);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(dir + "/report.json"));
  const auto& gpus = j.at("validated_error").at("gpus");
  REQUIRE(gpus.size() == 2);
  CHECK(gpus[0].at("gpu").get<std::string>() == "A100-SXM4-80GB");
  CHECK(gpus[0].at("runs").get<int>() == 3);
  CHECK(gpus[0].at("min_error_pct").get<double>() == -9.25);
  CHECK(gpus[1].at("gpu").get<std::string>() == "H100-SXM5-80GB");
  CHECK(gpus[1].at("runs").get<int>() == 0);
  const std::string a100 = "within a median 7.5% of 3 published runs on this GPU, from -9.2% to +1.5%; too short on 2 of 3";
  const std::string h100 = "no published run on this GPU validates ptsim";
  for (const char* page : {"/report.md", "/report.html"}) {
    INFO(page);
    CHECK_THAT(slurp(dir + page), Catch::Contains(a100) && Catch::Contains(h100));
  }
  CHECK_THAT(r.out, Catch::Contains("median |error| 7.5% over 3 runs"));
  // By default, the shipped bands: the A100's as validation/error_bands.json has it.
  const std::string shipped_dir = scratch_path("report-bands-shipped");
  std::filesystem::remove_all(shipped_dir);
  REQUIRE(run_ptsim("report -q --no-render --model " + kTiny + " --hw " + kA100 +
                    " --tokens 1e9 --gpus 4 --global-batch-size 16 --out " + shipped_dir).code == 0);
  const auto shipped = nlohmann::json::parse(slurp(source_path("validation/error_bands.json")));
  const auto report = nlohmann::json::parse(slurp(shipped_dir + "/report.json"));
  const auto& band = report.at("validated_error").at("gpus").at(0);
  CHECK(band.at("median_abs_error_pct") == shipped.at("gpus").at("A100-SXM4-80GB").at("median_abs_error_pct"));
  CHECK(band.at("runs") == shipped.at("gpus").at("A100-SXM4-80GB").at("runs"));
  // A bands file that is not one: exit 2, the key named, nothing written.
  {
    std::ofstream f(bands);
    f << R"({"schema": "ptsim-error-bands/1", "gpus": {"A100-SXM4-80GB": {"runs": 3}}})";
  }
  const std::string bad_dir = scratch_path("report-bands-bad");
  std::filesystem::remove_all(bad_dir);
  const auto bad = run_ptsim("report -q --no-render --model " + kTiny + " --hw " + kA100 +
                             " --tokens 1e9 --gpus 4 --global-batch-size 16 --error-bands " + bands + " --out " + bad_dir);
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("/gpus/A100-SXM4-80GB/median_abs_error_pct is missing"));
  CHECK_FALSE(std::filesystem::exists(bad_dir + "/report.json"));
}

TEST_CASE("ptsim report rejects bad input with exit code 2", "[cli][report]") {
  const std::string dir = scratch_path("report-bad");
  const std::string base = "report -q --no-render --model " + kTiny + " --hw " + kA100 + " --out " + dir;
  SECTION("no tokens") { CHECK(run_ptsim(base).code == 2); }
  SECTION("a GPU list that is not counts") {
    const auto r = run_ptsim(base + " --tokens 1e9 --gpus 8,eight");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("'eight'"));
  }
  SECTION("a negative price") { CHECK(run_ptsim(base + " --tokens 1e9 --price-per-gpu-hour -1").code == 2); }
}

TEST_CASE("ptsim sweep finds the best strategy at each what-if and applies the overrides", "[cli][sweep]") {
  const std::string spec = scratch_path("sweep.json");
  const std::string out = scratch_path("sweep-out.json");
  const std::string csv = scratch_path("sweep-out.csv");
  nlohmann::json s = {{"model", kTiny},
                      {"global_batch_size", 16},
                      {"gpus", {4, 8}},
                      {"hardware",
                       {{{"name", "baseline"}, {"profile", kA100}},
                        {{"name", "slow NVLink"},
                         {"profile", kA100},
                         {"overrides", {{"/network/nvlink/bandwidth_GBps", 3}}}},
                        {{"name", "1 MiB HBM"}, {"profile", kA100}, {"overrides", {{"/gpu/memory_GiB", 0.001}}}}}}};
  std::ofstream(spec) << s.dump();
  const auto r = run_ptsim("sweep -q " + spec + " --json " + out + " --csv " + csv);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(out));
  const auto& points = j.at("points");
  REQUIRE(points.size() == 6);
  for (int i = 0; i < 2; ++i) {
    const int gpus = i == 0 ? 4 : 8;
    const auto& base = points[i];
    const auto& slow = points[2 + i];
    const auto& tiny_hbm = points[4 + i];
    CHECK(base.at("gpus").get<int>() == gpus);
    CHECK(base.at("step_time_s").get<double>() == Approx(plan_best(kA100, gpus, 16)).epsilon(1e-9));
    // A hundredfold slower NVLink cannot make the best strategy faster; with
    // 8 GPUs in one NVLink domain every collective crosses it.
    CHECK(slow.at("step_time_s").get<double>() > base.at("step_time_s").get<double>());
    CHECK_FALSE(tiny_hbm.at("fits").get<bool>());
  }
  // The CSV: a header and one line per point.
  std::ifstream lines(csv);
  std::size_t count = 0;
  for (std::string line; std::getline(lines, line);) ++count;
  CHECK(count == 7);
}

TEST_CASE("ptsim sweep names the spec key it cannot use", "[cli][sweep]") {
  const std::string spec = scratch_path("bad-sweep.json");
  const auto sweep = [&](const nlohmann::json& s) {
    std::ofstream(spec) << s.dump();
    return run_ptsim("sweep -q " + spec);
  };
  const nlohmann::json hw = {{{"profile", kA100}}};
  SECTION("an unknown key") {
    const auto r = sweep({{"model", kTiny}, {"global_batch_size", 16}, {"gpus", {8}}, {"hardware", hw}, {"gpu", 1}});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("unknown key 'gpu'"));
  }
  SECTION("an override of a key the profile lacks") {
    const nlohmann::json bad = {{{"profile", kA100}, {"overrides", {{"/network/nvlink/bandwith_GBps", 1}}}}};
    const auto r = sweep({{"model", kTiny}, {"global_batch_size", 16}, {"gpus", {8}}, {"hardware", bad}});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("/network/nvlink/bandwith_GBps"));
  }
  SECTION("an override with a value the profile rejects") {
    const nlohmann::json bad = {{{"profile", kA100}, {"overrides", {{"/network/nvlink/bandwidth_GBps", -1}}}}};
    CHECK(sweep({{"model", kTiny}, {"global_batch_size", 16}, {"gpus", {8}}, {"hardware", bad}}).code == 2);
  }
  SECTION("no GPU counts") {
    CHECK(sweep({{"model", kTiny}, {"global_batch_size", 16}, {"hardware", hw}}).code == 2);
  }
}

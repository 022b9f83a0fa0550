// `ptsim fit` and `ptsim validate --fit-on` end to end: the fitted profile is
// a profile ptsim reads, each fitted figure names the fit as its source, and
// bad requests stop before any work with one clear line.
#include <filesystem>
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/run_binary.hpp"
#include "ptsim/config/load_hardware.hpp"
#include "ptsim/config/load_runs.hpp"
#include "ptsim/config/load_stack.hpp"

namespace {

using ptsim::test::slurp;
using ptsim::test::source_path;

ptsim::test::BinaryResult run(const std::string& args) { return ptsim::test::run_ptsim(args); }

std::string published() { return source_path("validation/published_runs.json"); }
std::string software() { return " --software " + source_path("validation/software.json"); }
std::string h100() { return source_path("hw_profiles/h100-sxm5-80gb.json"); }

}  // namespace

TEST_CASE("ptsim fit --runs writes a profile with its fitted figures, their source and a fit block", "[cli][fit]") {
  // Start from the H100 profile with its bf16 fraction at the upper bound its
  // source names (the H200's ratio at the H100's training clock, 0.7905), so
  // that the fit has somewhere to go; the shipped figure is this fit's result.
  const std::string start = ptsim::test::scratch_path("h100-upper-bound.json");
  {
    auto profile = nlohmann::json::parse(slurp(h100()));
    profile["gpu"]["sustained"]["tensor"]["bf16"] = 0.7905;
    profile["gpu"]["sustained"]["tensor"]["fp16"] = 0.7905;
    std::ofstream(start) << profile.dump(2);
  }
  const std::string out = ptsim::test::scratch_path("h100-fitted.json");
  const std::string json = ptsim::test::scratch_path("h100-fit-report.json");
  const auto r = run("fit --runs " + published() + " --hw " + start + software() + " --out " + out + " --json " + json +
                     " --quiet");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("ptsim fit: h100-sxm5-80gb on 9 run(s)"));
  CHECK_THAT(r.out, Catch::Contains("not fitted: sustained.tensor.fp8: no run trains in fp8"));
  const auto fitted = ptsim::config::load_hardware(out, ptsim::test::unchecked_inputs());
  REQUIRE(fitted.fit);
  // The runs it was fitted on are exactly the run file's H100 runs.
  std::set<std::string> h100_runs;
  for (const auto& run : ptsim::config::load_runs(published(), ptsim::test::unchecked_inputs()).runs)
    if (run.hardware == "h100-sxm5-80gb") h100_runs.insert(run.id);
  CHECK(std::set<std::string>(fitted.fit->points.begin(), fitted.fit->points.end()) == h100_runs);
  // Every fitted parameter is in the profile, at its fitted value, with the fit as its source.
  const auto report = nlohmann::json::parse(slurp(json));
  REQUIRE(!report.at("parameters").empty());
  for (const auto& p : report.at("parameters")) {
    CHECK(p.at("standard_error").is_number());
    if (p.at("name") == "sustained.tensor.bf16") {
      REQUIRE(fitted.gpu.sustained);
      // Written to four significant digits: within 5e-4 of the fitted value.
      CHECK(fitted.gpu.sustained->tensor_for(ptsim::Dtype::Bf16) == Approx(p.at("value").get<double>()).epsilon(5e-4));
      CHECK_THAT(fitted.sources.at("/gpu/sustained/tensor/bf16"), Catch::Contains("ptsim fit on " + published()));
      CHECK_THAT(fitted.sources.at("/gpu/sustained/tensor/fp16"), Catch::Contains("ptsim fit on"));
      // The shipped profile carries this fit's figure: the fit from the upper
      // bound lands on it, within the fit's own standard error.
      const auto shipped = ptsim::config::load_hardware(h100(), ptsim::test::unchecked_inputs());
      CHECK(p.at("value").get<double>() ==
            Approx(shipped.gpu.sustained->tensor_for(ptsim::Dtype::Bf16)).margin(p.at("standard_error").get<double>()));
    }
  }
  CHECK(report.at("summary").at("median_abs_error_after_pct").get<double>() <
        report.at("summary").at("median_abs_error_before_pct").get<double>());
  CHECK(report.at("points").size() == h100_runs.size());
}

TEST_CASE("ptsim fit --nccl-tests fits NVLink SHARP from a measured log", "[cli][fit][nccl]") {
  const std::string out = ptsim::test::scratch_path("h100-nvls.json");
  const auto r = run("fit --nccl-tests " + ptsim::test::data_path("nccl-tests/h100-1x8-nvls-allreduce.partial.log") +
                     " --op all_reduce --hw " + h100() + " --params nvlink.nvls_efficiency --out " + out + " -q");
  REQUIRE(r.code == 0);
  const auto fitted = ptsim::config::load_hardware(out, ptsim::test::unchecked_inputs());
  REQUIRE(fitted.fit);
  CHECK(fitted.fit->method == "nccl-tests");
  CHECK(fitted.fit->points.size() == 6);  // 128 MiB … 4 GiB
  REQUIRE(fitted.fit->parameters.size() == 1);
  REQUIRE(fitted.nvlink.nvls_efficiency);
  CHECK(*fitted.nvlink.nvls_efficiency == Approx(fitted.fit->parameters.front().value).epsilon(5e-4));
  CHECK_THAT(fitted.sources.at("/network/nvlink/nvls_efficiency"), Catch::Contains("log rows"));
  // --min-bytes keeps the rows of at least that size: 1 GiB, 2 GiB, 4 GiB.
  const auto large = run("fit --nccl-tests " + ptsim::test::data_path("nccl-tests/h100-1x8-nvls-allreduce.partial.log") +
                         " --op all_reduce --hw " + h100() + " --params nvlink.nvls_efficiency --min-bytes 1G --out " +
                         out + " -q");
  REQUIRE(large.code == 0);
  CHECK(ptsim::config::load_hardware(out, ptsim::test::unchecked_inputs()).fit->points.size() == 3);
  const auto none = run("fit --nccl-tests " + ptsim::test::data_path("nccl-tests/h100-1x8-nvls-allreduce.partial.log") +
                        " --op all_reduce --hw " + h100() + " --min-bytes 8G --out " + out + " -q");
  CHECK(none.code == 2);
  CHECK_THAT(none.err, Catch::Contains("no row of at least --min-bytes 8589934592 bytes"));
}

TEST_CASE("ptsim fit writes no profile when nothing is fitted and says how a log's large sizes would fit",
          "[cli][fit][nccl]") {
  // GKE's B200 all-gather log: its small sizes take about 0.25 ms whatever
  // their size, so over all 24 rows no NIC or NVLink figure is pinned down;
  // its four rows of 1 GiB and more fit nic.efficiency (0.65: 260 of the
  // profile's 375 GB/s of busbw).
  const std::string log = ptsim::test::data_path("nccl-tests/b200-gke-a4-2x8-allgather.log");
  const std::string b200 = ptsim::test::source_path("hw_profiles/b200-sxm-180gb.json");
  const std::string out = ptsim::test::scratch_path("b200-gke.json");
  const std::string json = ptsim::test::scratch_path("b200-gke-report.json");
  std::filesystem::remove(out);
  std::filesystem::remove(json);
  const auto none =
      run("fit --nccl-tests " + log + " --op all_gather --hw " + b200 + " --out " + out + " --json " + json + " -q");
  CHECK(none.code == 2);
  CHECK_THAT(none.err, Catch::Contains("nothing was fitted") && Catch::Contains("no profile is written") &&
                           Catch::Contains("--min-bytes 256M"));
  CHECK_FALSE(std::filesystem::exists(out));
  REQUIRE(std::filesystem::exists(json));
  const auto large =
      run("fit --nccl-tests " + log + " --op all_gather --hw " + b200 + " --min-bytes 1G --out " + out + " -q");
  REQUIRE(large.code == 0);
  const auto fitted = ptsim::config::load_hardware(out, ptsim::test::unchecked_inputs());
  REQUIRE(fitted.fit);
  REQUIRE(fitted.fit->parameters.size() == 1);
  CHECK(fitted.fit->parameters.front().name == "nic.efficiency");
  CHECK(fitted.fit->parameters.front().value == Approx(0.65).margin(0.02));
}

TEST_CASE("ptsim fit refuses what it cannot do before doing any work", "[cli][fit]") {
  const std::string base = "fit --runs " + published() + " --hw " + h100() + software();
  const std::string out = ptsim::test::scratch_path("refused.json");
  const auto named = run(base + " --params nic.latency --out " + out);
  CHECK(named.code == 2);
  CHECK_THAT(named.err, Catch::Contains("cannot fit nic.latency"));
  const auto unknown = run(base + " --params sustained.tensor --out " + out);
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("'sustained.tensor' is not a parameter ptsim fits"));
  const auto nowhere = run(base + " --out /nonexistent-dir/x.json");
  CHECK(nowhere.code == 2);
  CHECK_THAT(nowhere.err, Catch::Contains("--out /nonexistent-dir/x.json: cannot write there"));
  const auto same = run(base + " --out " + out + " --json " + out);
  CHECK(same.code == 2);
  CHECK_THAT(same.err, Catch::Contains("the same file as --out"));
  const auto over_input = run(base + " --out " + h100());
  CHECK(over_input.code == 2);
  CHECK_THAT(over_input.err, Catch::Contains("refusing to overwrite"));
  const auto neither = run("fit --hw " + h100() + " --out " + out);
  CHECK(neither.code == 2);
  CHECK_THAT(neither.err, Catch::Contains("give either --runs FILE or --nccl-tests LOG"));
  const auto help = run("fit --help");
  CHECK(help.code == 0);
  CHECK_THAT(help.out, Catch::Contains("Examples:") && Catch::Contains("sustained.tensor.bf16"));
}

TEST_CASE("ptsim fit --stack --out-stack writes the stack with the host time its runs were measured at", "[cli][fit]") {
  // Host-bound steps of the tiny model "measured" under Megatron-Core's
  // stack with a 30 µs host, fitted from the default 65 µs.
  const std::string model = source_path("configs/models/tiny.json");
  nlohmann::json runs = {{"schema", "ptsim-runs/1"}, {"runs", nlohmann::json::array()}};
  const std::string step_json = ptsim::test::scratch_path("host-step.json");
  struct Layout {
    int gpus, tp, gbs, mbs;
  };
  std::vector<double> measured;
  for (const Layout l : {Layout{8, 1, 64, 4}, Layout{8, 2, 32, 2}, Layout{4, 1, 16, 1}}) {
    const auto sim = run(
        fmt::
            format("simulate --model {} --hw {} --gpus {} --tp {} --global-batch-size {} --micro-batch-size {} --stack "
                   "megatron-core --host-overhead-us 30 --recompute none --schedule 1f1b --zero 1 {} --json {}",
                   model, h100(), l.gpus, l.tp, l.gbs, l.mbs, l.tp > 1 ? "--sequence-parallel" : "", step_json));
    REQUIRE(sim.code == 0);
    measured.push_back(nlohmann::json::parse(slurp(step_json)).at("step_time_s").get<double>());
    auto m = nlohmann::json::parse(slurp(model));
    m.erase("source");
    runs["runs"].push_back({{"id", fmt::format("host-tp{}-gpus{}", l.tp, l.gpus)},
                            {"source", "generated by ptsim at 30 µs per task"},
                            {"model", m},
                            {"hardware", "h100-sxm5-80gb"},
                            {"num_gpus", l.gpus},
                            {"parallel",
                             {{"tp", l.tp},
                              {"pp", 1},
                              {"dp", l.gpus / l.tp},
                              {"cp", 1},
                              {"ep", 1},
                              {"vpp", nullptr},
                              {"sequence_parallel", l.tp > 1},
                              {"recompute", "none"},
                              {"zero", 1},
                              {"schedule", "1f1b"}}},
                            {"batch", {{"global_batch_size", l.gbs}, {"micro_batch_size", l.mbs}}},
                            {"precision", "bf16"},
                            {"measured", {{"step_time_s", measured.back()}, {"derived_from", "ptsim simulate"}}}});
  }
  const std::string runs_path = ptsim::test::scratch_path("host-runs.json");
  std::ofstream(runs_path) << runs.dump(1);
  const std::string out = ptsim::test::scratch_path("my-megatron-core.json");
  const std::string fit = "fit --runs " + runs_path + " --hw " + h100() + " --stack megatron-core";
  const auto r = run(fit + " --params host.overhead_us --out-stack " + out + " --quiet");
  REQUIRE(r.code == 0);
  const auto stack = ptsim::config::load_stack(out, ptsim::test::unchecked_inputs());
  CHECK(stack.name == "my-megatron-core");
  REQUIRE(stack.settings.host_overhead_us);
  CHECK(*stack.settings.host_overhead_us == Approx(30).margin(0.1));
  CHECK_THAT(stack.evidence.at("host_overhead_us"), Catch::Contains("ptsim fit on " + runs_path));
  // The written stack reproduces the steps it was fitted to.
  const auto again =
      run(fmt::format("simulate --model {} --hw {} --gpus 8 --global-batch-size 64 --micro-batch-size 4 --stack {} "
                      "--recompute none "
                      "--schedule 1f1b --zero 1 --json {}",
                      model, h100(), out, step_json));
  REQUIRE(again.code == 0);
  CHECK(nlohmann::json::parse(slurp(step_json)).at("step_time_s").get<double>() == Approx(measured[0]).epsilon(2e-3));
  // What cannot be written is refused before any work.
  const auto no_stack = run("fit --runs " + runs_path + " --hw " + h100() + " --out-stack " + out);
  CHECK(no_stack.code == 2);
  CHECK_THAT(no_stack.err, Catch::Contains("--out-stack needs --stack"));
  const auto more = run(fit + " --out-stack " + out);
  CHECK(more.code == 2);
  CHECK_THAT(more.err, Catch::Contains("without --out only the stack's host time"));
  const auto both = run(fit + software() + " --params host.overhead_us --out-stack " + out);
  CHECK(both.code == 2);
  CHECK_THAT(both.err, Catch::Contains("--stack or --software, not both"));
}

TEST_CASE("ptsim validate --fit-on predicts runs on profiles fitted to other runs", "[cli][fit]") {
  // Four Table 1 rows of the published file (A100), two of them relabelled
  // as a source of their own: left out one source at a time, each pair is
  // predicted from a fit on the other pair.
  auto j = nlohmann::json::parse(slurp(published()));
  auto& rows = j.at("runs");
  rows.erase(rows.begin() + 4, rows.end());
  for (std::size_t i = 2; i < 4; ++i) rows[i]["source"] = "the other half";
  const std::string runs = ptsim::test::scratch_path("four-runs.json");
  std::ofstream(runs) << j.dump(1);
  const std::string json = ptsim::test::scratch_path("loso.json");
  const std::string validate = "validate --runs " + runs + " --hw-dir " + source_path("hw_profiles") + software();
  const auto r = run(validate + " --fit-on " + runs + " --leave-one-source-out --fit-params sustained.tensor.bf16 -q" +
                     " --json " + json);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("fitted a100-sxm4-80gb on 2 run(s) of " + runs + " (leaving out the other half)"));
  CHECK_THAT(r.out, Catch::Contains("fitted a100-sxm4-80gb on 2 run(s) of " + runs + " (leaving out Narayanan"));
  const auto out = nlohmann::json::parse(slurp(json));
  REQUIRE(out.at("fits").size() == 2);
  REQUIRE(out.at("runs").size() == 4);
  // In sample, one fit of all four: a different prediction than uncalibrated.
  const auto in_sample = run(validate + " --fit-on " + runs + " --fit-params sustained.tensor.bf16 -q --json " + json);
  REQUIRE(in_sample.code == 0);
  CHECK_THAT(in_sample.out, Catch::Contains("fitted a100-sxm4-80gb on 4 run(s)"));
  const double fitted = nlohmann::json::parse(slurp(json)).at("runs")[0].at("predicted_step_time_s").get<double>();
  REQUIRE(run(validate + " -q --json " + json).code == 0);
  const double plain = nlohmann::json::parse(slurp(json)).at("runs")[0].at("predicted_step_time_s").get<double>();
  CHECK(fitted != plain);
  const auto misuse = run("validate --runs " + published() + " --leave-one-source-out");
  CHECK(misuse.code == 2);
  CHECK_THAT(misuse.err, Catch::Contains("go with --fit-on FILE"));
}

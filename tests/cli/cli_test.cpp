// The ptsim binary end to end: exit codes, messages, output files.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/run_binary.hpp"

namespace {

using Result = ptsim::test::BinaryResult;
using ptsim::test::slurp;

Result run(const std::string& args) { return ptsim::test::run_ptsim(args); }

// `ptsim kernels` of a shipped model on a shipped profile with `args`, its
// micro-benchmark list written to scratch file `list_name`: the printed
// table and the list's text.
struct KernelsListing {
  std::string out, list;
};
KernelsListing kernels_listing(const std::string& model, const std::string& hardware, const std::string& args,
                               const std::string& list_name) {
  const std::string list = ptsim::test::scratch_path(list_name);
  const auto r =
      run("kernels --model " + ptsim::test::source_path("configs/models/" + model + ".json") + " --hw " +
          ptsim::test::source_path("hw_profiles/" + hardware + ".json") + " " + args + " --microbench-list " + list);
  REQUIRE(r.code == 0);
  return {r.out, slurp(list)};
}

std::string tiny_run() {
  return "simulate --model " + ptsim::test::source_path("configs/models/tiny.json") + " --hw " +
         ptsim::test::source_path("hw_profiles/a100-sxm4-80gb.json");
}

}  // namespace

TEST_CASE("ptsim simulate writes the summary, the JSON report and a trace", "[cli]") {
  const std::string json = ptsim::test::scratch_path("tiny.json");
  const std::string trace = ptsim::test::scratch_path("tiny.trace.json");
  const auto r = run(tiny_run() + " --gpus 8 --tp 2 --pp 2 --global-batch-size 16 --micro-batch-size 2"
                     " --json " + json + " --trace " + trace);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("tiny-gpt on 8 × A100-SXM4-80GB (1 node) · TP 2 · PP 2 · DP 2"));
  CHECK_THAT(r.out, Catch::Contains("pipeline bubble"));
  const auto j = nlohmann::json::parse(slurp(json));
  CHECK(j.at("schema_version").get<int>() == 1);
  const auto& b = j.at("breakdown_s");
  const double sum = b.at("compute").get<double>() + b.at("exposed_communication").get<double>() +
                     b.at("pipeline_bubble").get<double>() + b.at("host_issue").get<double>() +
                     b.at("optimizer").get<double>();
  CHECK(sum == Approx(j.at("step_time_s").get<double>()).epsilon(1e-9));
  for (const char* key : {"tokens_per_s", "model_tflops_per_gpu", "mfu"}) CHECK(j.at("throughput").contains(key));
  for (const char* key : {"peak_bytes", "capacity_bytes", "fits", "params_bytes", "grads_bytes",
                          "optimizer_bytes", "activations_peak_bytes"})
    CHECK(j.at("memory").contains(key));
  for (const char* dim : {"tp", "pp", "dp"}) {
    CHECK(j.at("communication").at(dim).contains("bytes"));
    CHECK(j.at("communication").at(dim).contains("time_s"));
  }
  CHECK(j.at("simulation").at("mode").get<std::string>() == "explicit");
  CHECK(j.at("simulation").at("events").get<std::uint64_t>() > 0);

  // The trace: one process per rank, one thread per stream, a memory counter.
  const auto t = nlohmann::json::parse(slurp(trace));
  std::set<int> pids;
  bool memory_counter = false;
  std::size_t complete = 0;
  // The host track: at the default 65 µs of host time a task, one issue
  // slice of 65 µs per task, back to back or apart, never overlapping.
  std::map<int, std::vector<std::pair<double, double>>> host;
  for (const auto& e : t.at("traceEvents")) {
    pids.insert(e.at("pid").get<int>());
    if (e.at("ph") == "C" && e.at("name") == "memory") memory_counter = true;
    if (e.at("ph") != "X") continue;
    if (e.at("cat") == "host issue") {
      CHECK(e.at("dur").get<double>() == Approx(65.0));
      host[e.at("pid").get<int>()].emplace_back(e.at("ts").get<double>(), e.at("dur").get<double>());
    } else {
      ++complete;
    }
  }
  CHECK(pids.size() == 8);
  CHECK(memory_counter);
  const auto tasks = j.at("simulation").at("tasks").get<std::size_t>();
  CHECK(complete == tasks);
  std::size_t issued = 0;
  for (auto& [pid, slices] : host) {
    std::sort(slices.begin(), slices.end());
    for (std::size_t i = 1; i < slices.size(); ++i)
      CHECK(slices[i].first >= slices[i - 1].first + slices[i - 1].second - 1e-3);
    issued += slices.size();
  }
  CHECK(issued == tasks);
  // No empty tracks: every named thread runs something; and a GEMM's slice
  // carries its shape and FLOPs, 2·m·n·k·batch.
  std::set<std::pair<int, int>> named, busy;
  std::size_t gemms = 0;
  for (const auto& e : t.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") named.emplace(e.at("pid").get<int>(), e.at("tid").get<int>());
    if (e.at("ph") != "X") continue;
    busy.emplace(e.at("pid").get<int>(), e.at("tid").get<int>());
    const auto& a = e.at("args");
    if (a.value("kernel", "") != "gemm") continue;
    ++gemms;
    const auto& shape = a.at("shape");
    const double expected = 2.0 * shape[0].get<double>() * shape[1].get<double>() * shape[2].get<double>() *
                            shape[3].get<double>();
    CHECK(a.at("flops").get<double>() == Approx(expected));
  }
  CHECK(gemms > 0);
  CHECK(named == busy);
  // Flow arrows: each chain starts with "s", ends with "f", visits distinct
  // ranks; a pipeline send's chain ends on the next stage's receive stream.
  std::map<std::uint64_t, std::vector<nlohmann::json>> chains;
  for (const auto& e : t.at("traceEvents"))
    if (e.value("cat", "") == "flow") chains[e.at("id").get<std::uint64_t>()].push_back(e);
  REQUIRE_FALSE(chains.empty());
  std::size_t sends = 0;
  for (const auto& [id, chain] : chains) {
    INFO(id);
    REQUIRE(chain.size() >= 2);
    CHECK(chain.front().at("ph") == "s");
    CHECK(chain.back().at("ph") == "f");
    std::set<int> members;
    for (const auto& e : chain) members.insert(e.at("pid").get<int>());
    CHECK(members.size() == chain.size());
    if (chain.front().at("name") == "pp.send_activation") {
      ++sends;
      // TP 2 · DP 2 · PP 2, Megatron's order: a stage is 4 ranks; the receiver is 4 further on.
      CHECK(chain.back().at("pid").get<int>() == chain.front().at("pid").get<int>() + 4);
    }
  }
  CHECK(sends > 0);
}

TEST_CASE("ptsim rejects bad input with exit code 2 and one clear line", "[cli]") {
  SECTION("inconsistent strategy") {
    const auto r = run(tiny_run() + " --gpus 8 --tp 3 --global-batch-size 8");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("error: --tp = 3 must divide num_attention_heads = 8"));
    CHECK(r.out.empty());
  }
  SECTION("both a flag and its alias") {
    const auto r = run(tiny_run() + " --gpus 8 --tp 2 --tensor-model-parallel-size 2 --global-batch-size 8");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("--tensor-model-parallel-size and --tp set the same value"));
  }
  SECTION("a value holding one of Boost's message placeholders (fuzz_cli once hung here)") {
    const auto r = run(tiny_run() + " --gpus 16 --ep 2%value% --global-batch-size 8");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("argument '2%value%' contains '%value%'"));
  }
  SECTION("unknown flag") {
    const auto r = run(tiny_run() + " --gpus 8 --global-batch-size 8 --tpp 2");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("unrecognised option '--tpp' (did you mean --tp?)"));
  }
  SECTION("a prefix of a flag is not the flag (no guessing)") {
    // Boost would take --micro as --micro-batch-size, and Megatron's
    // --num-layers as --num-layers-per-virtual-pipeline-stage.
    const auto micro = run(tiny_run() + " --gpus 8 --global-batch-size 8 --micro 2");
    CHECK(micro.code == 2);
    CHECK_THAT(micro.err, Catch::Contains("unrecognised option '--micro' (did you mean --micro-batch-size?)"));
    const auto layers = run(tiny_run() + " --gpus 8 --pp 2 --global-batch-size 8 --num-layers 10");
    CHECK(layers.code == 2);
    CHECK_THAT(layers.err, Catch::Contains("--num-layers is a Megatron-LM model flag: ptsim reads the model from "
                                           "--model FILE"));
    const auto far = run(tiny_run() + " --gpus 8 --global-batch-size 8 --xyzzy 1");
    CHECK(far.code == 2);
    CHECK_THAT(far.err, !Catch::Contains("did you mean"));
  }
  SECTION("a word no flag takes, such as a value after a switch") {
    // Without a positional description Boost dropped the word, so
    // "--allow-oom false" ran with the switch on.
    const auto r = run(tiny_run() + " --gpus 8 --global-batch-size 8 --allow-oom false");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("unexpected argument 'false': no flag takes it"));
    CHECK(r.out.empty());
  }
  SECTION("non-numeric value") {
    const auto r = run(tiny_run() + " --gpus eight --global-batch-size 8");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("--gpus"));
  }
  SECTION("missing model file") {
    const auto r = run("simulate --model /nonexistent/m.json --hw x.json --gpus 1 --global-batch-size 1");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("/nonexistent/m.json: cannot open the file"));
  }
  SECTION("missing required flag") {
    const auto r = run("simulate --gpus 1");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("--model FILE (or a Megatron-LM launch line after --) is required"));
  }
  SECTION("an output over an input") {
    const auto r = run(tiny_run() + " --gpus 1 --global-batch-size 1 --json " +
                       ptsim::test::source_path("configs/models/tiny.json"));
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("refusing to overwrite") && Catch::Contains("tiny.json, an input of this run"));
  }
  SECTION("an output over a profile that only a sweep's spec names") {
    const std::string profile = ptsim::test::scratch_path("sweep-profile.json");
    const std::string original = ptsim::test::slurp(ptsim::test::source_path("hw_profiles/a100-sxm4-80gb.json"));
    std::ofstream(profile) << original;
    const std::string spec = ptsim::test::scratch_path("sweep-spec.json");
    std::ofstream(spec) << "{\"model\": \"" << ptsim::test::source_path("configs/models/tiny.json")
                        << "\", \"global_batch_size\": 8, \"gpus\": [8], \"hardware\": [{\"profile\": \""
                        << profile << "\"}]}";
    const auto r = run("sweep " + spec + " -q --json " + profile);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("refusing to overwrite"));
    CHECK(ptsim::test::slurp(profile) == original);
  }
  SECTION("an output over a profile that only a run in the runs file names") {
    // validate reads the profile from --hw-dir after its outputs were
    // checked: the writer still refuses it, from what the loaders recorded.
    const std::filesystem::path dir = ptsim::test::scratch_path("validate-hw");
    std::filesystem::create_directories(dir);
    const std::string profile = (dir / "a100-sxm4-80gb.json").string();
    const std::string original = ptsim::test::slurp(ptsim::test::source_path("hw_profiles/a100-sxm4-80gb.json"));
    std::ofstream(profile) << original;
    const std::string runs = ptsim::test::scratch_path("validate-runs.json");
    std::ofstream(runs) << R"({"schema": "ptsim-runs/1", "runs": [
      {"id": "tiny-a", "source": "test", "hardware": "a100-sxm4-80gb", "num_gpus": 8,
       "model": {"name": "tiny", "num_layers": 4, "hidden_size": 1024, "num_attention_heads": 16,
                 "vocab_size": 1024, "seq_length": 512},
       "parallel": {"tp": 2, "pp": 2, "dp": 2, "cp": 1, "ep": 1, "vpp": 1, "sequence_parallel": false,
                    "recompute": "none", "zero": 0, "schedule": "1f1b"},
       "batch": {"global_batch_size": 16, "micro_batch_size": 1},
       "precision": "bf16", "measured": {"step_time_s": 0.05, "derived_from": "made up for the test"}}]})";
    const auto r = run("validate --runs " + runs + " --hw-dir " + dir.string() + " --quiet --json " + profile);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("refusing to overwrite") && Catch::Contains("an input of this run"));
    CHECK(ptsim::test::slurp(profile) == original);
  }
  SECTION("a shard file with a field of the wrong type") {
    const auto r = run("merge " + ptsim::test::source_path("fuzz/regressions/fuzz_merge/bad2-malformed-shard.json"));
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("bad2-malformed-shard.json: not the JSON of ptsim plan --json"));
    // fuzz_merge's finding: a float count beyond any integer type.
    const auto f = run("merge " + ptsim::test::source_path("fuzz/regressions/fuzz_merge/top-1e29-float.json"));
    CHECK(f.code == 2);
    CHECK_THAT(f.err, Catch::Contains("top = 2.222222222222222e+29 must be a whole number"));
  }
  SECTION("unknown command") {
    const auto r = run("simulat");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("unknown command 'simulat'"));
  }
}

TEST_CASE("ptsim simulate says which asked-for trace ranks a symmetric run does not simulate", "[cli]") {
  // 128 GPUs, TP 8, PP 2: symmetric mode simulates the first rank of each
  // stage, 0 and 64; rank 8 (a data-parallel peer of rank 0) is not traced.
  const std::string trace = ptsim::test::scratch_path("symmetric.trace.json");
  const auto r = run(tiny_run() + " --gpus 128 --tp 8 --pp 2 --global-batch-size 32 --mode symmetric --trace " + trace +
                     " --trace-ranks 0,8");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.err, Catch::Contains("rank(s) 8 not in the trace: symmetric mode simulates ranks 0, 64"));
  const auto t = nlohmann::json::parse(slurp(trace));
  std::set<int> pids;
  for (const auto& e : t.at("traceEvents")) pids.insert(e.at("pid").get<int>());
  CHECK(pids == std::set<int>{0});
}

TEST_CASE("ptsim simulate exits 3 when the strategy does not fit, its JSON still whole", "[cli]") {
  // GPT-3 175B on one node: Adam's 16 bytes a parameter alone are 175e9·16/8 = 350 GB a GPU.
  const std::string json = ptsim::test::scratch_path("oom.json");
  const std::string oom = "simulate --model " + ptsim::test::source_path("configs/models/gpt3-175b.json") +
                          " --hw " + ptsim::test::source_path("hw_profiles/a100-sxm4-80gb.json") +
                          " --gpus 8 --tp 8 --global-batch-size 8";
  const auto r = run(oom + " --json " + json);
  CHECK(r.code == 3);
  CHECK_THAT(r.out, Catch::Contains("DOES NOT FIT"));
  CHECK_THAT(r.err, Catch::Contains("does not fit in memory") && Catch::Contains("--allow-oom"));
  const auto j = nlohmann::json::parse(slurp(json));
  CHECK_FALSE(j.at("memory").at("fits").get<bool>());
  CHECK(j.at("memory").at("peak_bytes").get<double>() > 175e9 * 16 / 8);
  CHECK(run(oom + " --allow-oom").code == 0);
}

TEST_CASE("ptsim simulate holds back the memory headroom: fits is peak + headroom within HBM", "[cli]") {
  const std::string json = ptsim::test::scratch_path("headroom.json");
  const std::string base = tiny_run() + " --gpus 8 --global-batch-size 8 --json " + json;
  REQUIRE(run(base).code == 0);
  auto j = nlohmann::json::parse(slurp(json));
  // The default: a 0.4 GB CUDA context and three NCCL communicators of 0.688 GB.
  CHECK(j.at("memory").at("headroom_bytes").get<double>() == Approx(0.4e9 + 3 * 0.688e9).epsilon(1e-9));
  const double peak = j.at("memory").at("peak_bytes").get<double>();
  const double hbm = j.at("memory").at("capacity_bytes").get<double>();
  const double room_gib = (hbm - peak) / (1ull << 30);
  const auto just_fits = run(base + fmt::format(" --memory-headroom {:.4f}", room_gib - 0.001));
  CHECK(just_fits.code == 0);
  const auto over = run(base + fmt::format(" --memory-headroom {:.4f}", room_gib + 0.001));
  CHECK(over.code == 3);
  j = nlohmann::json::parse(slurp(json));
  CHECK_FALSE(j.at("memory").at("fits").get<bool>());
  CHECK(j.at("memory").at("peak_bytes").get<double>() == peak);  // the step itself is the same
}

TEST_CASE("A Hugging Face config's long max_position_embeddings is used with a note, and seq is in the header",
          "[cli]") {
  const std::string config = ptsim::test::scratch_path("qwen-like.json");
  {
    std::ofstream out(config);
    out << R"({"model_type": "qwen2", "hidden_act": "silu", "hidden_size": 256, "intermediate_size": 512,
               "max_position_embeddings": 32768, "num_attention_heads": 4, "num_hidden_layers": 2,
               "num_key_value_heads": 2, "tie_word_embeddings": false, "vocab_size": 1024})";
  }
  const std::string base = "simulate --model " + config + " --hw " +
                           ptsim::test::source_path("hw_profiles/a100-sxm4-80gb.json") +
                           " --gpus 1 --global-batch-size 1 --allow-oom";
  const auto r = run(base);
  CHECK(r.code == 0);
  CHECK_THAT(r.err, Catch::Contains("sequence length 32768 is the config's max_position_embeddings"));
  CHECK_THAT(r.out, Catch::Contains("· seq 32768 ·"));
  const auto given = run(base + " --seq-length 4096");
  CHECK(given.code == 0);
  CHECK(given.err.find("max_position_embeddings") == std::string::npos);
  CHECK_THAT(given.out, Catch::Contains("· seq 4096 ·"));
}

TEST_CASE("A model with Mamba-2 layers is simulated with a note that their kernels are unmeasured", "[cli]") {
  const std::string hw = " --hw " + ptsim::test::source_path("hw_profiles/h100-sxm5-80gb.json") +
                         " --gpus 16 --ep 8 --global-batch-size 16 --allow-oom";
  const auto hybrid =
      run("simulate --model " + ptsim::test::source_path("configs/models/nemotron-3-nano-30b-a3b.json") + hw);
  CHECK(hybrid.code == 0);
  CHECK_THAT(hybrid.err, Catch::Contains("Mamba-2 layers' SSD kernels are priced at the SMs' rates measured"));
  const auto moe = run("simulate --model " + ptsim::test::source_path("configs/models/qwen3-30b-a3b.json") + hw +
                       " --seq-length 4096");
  CHECK(moe.code == 0);
  CHECK(moe.err.find("Mamba") == std::string::npos);
}

TEST_CASE("ptsim kernels says at which rate a Mamba-2 layer's SSD kernels run", "[cli]") {
  // The H100's measured 266.4 and 146.7 FLOPs a cycle per SM (132 SMs at
  // 1,980 MHz: 69.63 and 38.34 TFLOP/s) times a GB300's SMs × clock over an
  // H100's, 152·2070 / (132·1980) = 1.2039: 83.8 and 46.2 TFLOP/s; HBM
  // 8,000 GB/s at 0.9 = 7.20 TB/s.
  const auto r = run("kernels --model " + ptsim::test::source_path("configs/models/nemotron-3-nano-30b-a3b.json") +
                     " --hw " + ptsim::test::source_path("hw_profiles/gb300-nvl72.json") +
                     " --gpus 8 --ep 8 --global-batch-size 8 --seq-length 4096");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("ssd_scan: FLOPs at the SMs' issue rate, 83.8 TFLOP/s forward and 46.2 backward"));
  CHECK_THAT(r.out, Catch::Contains("or bytes at HBM's, 7.20 TB/s"));
  const auto dense = run("kernels --model " + ptsim::test::source_path("configs/models/llama3-8b.json") + " --hw " +
                         ptsim::test::source_path("hw_profiles/gb300-nvl72.json") +
                         " --gpus 8 --global-batch-size 8 --seq-length 4096");
  CHECK(dense.code == 0);
  CHECK(dense.out.find("ssd_scan") == std::string::npos);
}

TEST_CASE("The console's MFU names its bf16 peak where the run multiplies in another format", "[cli]") {
  // MFU is model FLOPs over the dense bf16 peak (docs/formats.md), which an
  // FP8 run can exceed (Llama 3.1 405B in FP8 on 256 GB300s: 103%), so the
  // line says which peak; a bf16 run's needs no note.
  const std::string args = "simulate --model " + ptsim::test::source_path("configs/models/llama3-8b.json") + " --hw " +
                           ptsim::test::source_path("hw_profiles/h100-sxm5-80gb.json") +
                           " --gpus 8 --global-batch-size 16 --allow-oom";
  const auto fp8 = run(args + " --precision fp8");
  REQUIRE(fp8.code == 0);
  CHECK_THAT(fp8.out, Catch::Contains("% of the bf16 peak"));
  const auto bf16 = run(args);
  REQUIRE(bf16.code == 0);
  CHECK_THAT(bf16.out, Catch::Contains("MFU"));
  CHECK(bf16.out.find("of the bf16 peak") == std::string::npos);
}

TEST_CASE("ptsim simulate and plan take a Megatron-LM launch line after --", "[cli][megatron]") {
  const std::string hw = ptsim::test::source_path("hw_profiles/a100-sxm4-80gb.json");
  const std::string line = " -- --num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
                           "--max-position-embeddings 1024 --vocab-size 32000 --tensor-model-parallel-size 2 "
                           "--micro-batch-size 1 --global-batch-size 8 --bf16 --lr 1e-4";
  const auto r = run("simulate --hw " + hw + " --gpus 8" + line);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("TP 2 · PP 1 · DP 4") && Catch::Contains("seq 1024"));
  CHECK_THAT(r.err, Catch::Contains("ignored: --lr"));
  // ptsim's flag agreeing with Megatron's is fine; disagreeing is an error naming both.
  CHECK(run("simulate --hw " + hw + " --gpus 8 --tp 2" + line).code == 0);
  const auto conflict = run("simulate --hw " + hw + " --gpus 8 --tp 4" + line);
  CHECK(conflict.code == 2);
  CHECK_THAT(conflict.err, Catch::Contains("disagrees with") && Catch::Contains("tensor_model_parallel_size"));
  const auto both = run("simulate --hw " + hw + " --gpus 8 --model " +
                        ptsim::test::source_path("configs/models/tiny.json") + line);
  CHECK(both.code == 2);
  CHECK_THAT(both.err, Catch::Contains("both give the model"));
  // plan searches the layout: the launch line's TP 2 is not pinned.
  const auto plan = run("plan --hw " + hw + " --gpus 8 --quiet --top 50" + line);
  CHECK(plan.code == 0);
  CHECK_THAT(plan.out, Catch::Contains("tp=1 ") && Catch::Contains("tp=2 "));
}

TEST_CASE("ptsim simulate checks its output paths before the work and writes them all or none", "[cli]") {
  const std::string json = ptsim::test::scratch_path("paths.json");
  std::remove(json.c_str());
  const std::string ok = tiny_run() + " --gpus 8 --global-batch-size 8";
  SECTION("an output in a directory that does not exist") {
    const auto r = run(ok + " --json " + json + " --trace /nonexistent-dir/t.json");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("--trace /nonexistent-dir/t.json: cannot write there"));
    CHECK(r.out.empty());  // refused before the simulation
    CHECK_FALSE(std::ifstream(json).good());  // and the JSON not left behind
  }
  SECTION("two outputs on one path") {
    const auto r = run(ok + " --json " + json + " --trace " + json);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("the same file as --json"));
    CHECK_FALSE(std::ifstream(json).good());
  }
  SECTION("an output over an input") {
    const std::string model = ptsim::test::source_path("configs/models/tiny.json");
    const auto r = run(ok + " --json " + model);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("refusing to overwrite"));
    CHECK(r.out.empty());
  }
}

TEST_CASE("plan, report and kernels refuse a bad output path before their work", "[cli]") {
  const std::string model = ptsim::test::source_path("configs/models/tiny.json");
  const std::string hw = ptsim::test::source_path("hw_profiles/a100-sxm4-80gb.json");
  SECTION("plan --json in a directory that does not exist: no search, exit 2") {
    const auto r = run("plan --model " + model + " --hw " + hw + " --gpus 8 --global-batch-size 8 --quiet" +
                       " --json /nonexistent-dir/plan.json");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("--json /nonexistent-dir/plan.json: cannot write there"));
    CHECK(r.out.empty());
  }
  SECTION("plan --json and --csv on one path") {
    const std::string path = ptsim::test::scratch_path("plan-both");
    const auto r = run("plan --model " + model + " --hw " + hw + " --gpus 8 --global-batch-size 8 --quiet --json " +
                       path + " --csv " + path);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("--csv " + path + ": the same file as --json"));
  }
  SECTION("report --out that cannot be made is a usage error, not ptsim's (70)") {
    const auto r = run("report --model " + model + " --hw " + hw +
                       " --tokens 1e6 --gpus 8 --global-batch-size 8 --no-render --out /proc/ptsim-nope/report");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("--out /proc/ptsim-nope/report: cannot make the directory"));
    CHECK(r.out.empty());
  }
  SECTION("plan --schedules with a name that is not a schedule") {
    const auto r = run("plan --model " + model + " --hw " + hw + " --gpus 8 --global-batch-size 8 --quiet" +
                       " --schedules 1f1b,zb-h3");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("--schedules: 'zb-h3' is not a schedule; use naive, gpipe, 1f1b"));
  }
  SECTION("plan --schedules beyond what the --stack runs") {
    const auto r = run("plan --model " + model + " --hw " + hw + " --gpus 8 --global-batch-size 8 --quiet" +
                       " --stack megatron-lm-2021 --schedules 1f1b,zb-h1");
    CHECK(r.code == 2);
    CHECK_THAT(r.err,
               Catch::Contains("--schedules: stack megatron-lm-2021 cannot run zb-h1; it runs 1f1b, interleaved"));
  }
  SECTION("--stack naming no shipped stack") {
    const auto r = run("plan --model " + model + " --hw " + hw + " --gpus 8 --global-batch-size 8 --quiet" +
                       " --stack megatron-lm-1999");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("--stack megatron-lm-1999: no shipped stack of that name"));
    CHECK_THAT(r.err, Catch::Contains("megatron-core"));
  }
  SECTION("kernels --microbench-list over its --json") {
    const std::string path = ptsim::test::scratch_path("kernels-both");
    const auto r = run("kernels --model " + model + " --hw " + hw + " --gpus 8 --global-batch-size 8 --json " + path +
                       " --microbench-list " + path);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("the same file as --json"));
  }
}

TEST_CASE("ptsim merge takes each shard of one search once, all of them", "[cli]") {
  const std::string search = "plan --model " + ptsim::test::source_path("configs/models/tiny.json") + " --hw " +
                             ptsim::test::source_path("hw_profiles/a100-sxm4-80gb.json") +
                             " --gpus 8 --global-batch-size 8 --quiet";
  std::vector<std::string> parts;
  for (int i = 0; i < 3; ++i) {
    parts.push_back(ptsim::test::scratch_path("merge-part" + std::to_string(i) + ".json"));
    REQUIRE(run(search + " --shard " + std::to_string(i) + "/3 --json " + parts.back()).code == 0);
  }
  const auto whole = run("merge " + parts[0] + " " + parts[1] + " " + parts[2]);
  CHECK(whole.code == 0);
  const auto twice = run("merge " + parts[0] + " " + parts[1] + " " + parts[2] + " " + parts[1]);
  CHECK(twice.code == 2);
  CHECK_THAT(twice.err, Catch::Contains("shard 1 of 3 is given twice"));
  const auto missing = run("merge " + parts[0] + " " + parts[2]);
  CHECK(missing.code == 2);
  CHECK_THAT(missing.err, Catch::Contains("shard 1/3 of the search is missing"));
  const auto one = run("merge " + parts[0]);
  CHECK(one.code == 2);
  CHECK_THAT(one.err, Catch::Contains("shards 1/3, 2/3 of the search are missing"));
  // A part written before plans recorded their schedules: a usage error, not a crash.
  auto old = nlohmann::json::parse(slurp(parts[2]));
  old.erase("schedules");
  const std::string old_part = ptsim::test::scratch_path("merge-part2-old.json");
  std::ofstream(old_part) << old.dump();
  const auto mixed = run("merge " + parts[0] + " " + parts[1] + " " + old_part);
  CHECK(mixed.code == 2);
  CHECK_THAT(mixed.err, Catch::Contains("schedules = null differs from the first shard's"));
}

TEST_CASE("ptsim check-kernels says which flag brings in the kernels it skipped", "[cli]") {
  // The shipped H100 table: 98 third-party timings nobody checked, and the
  // 27 the profile's calibration was fitted on (hw_profiles/measured/).
  const auto r = run("check-kernels --measurements " +
                     ptsim::test::source_path("hw_profiles/measured/h100-openxla-matmul-table.json") + " --hw " +
                     ptsim::test::source_path("hw_profiles/h100-sxm5-80gb.json"));
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("no kernel could be checked") && Catch::Contains("--include-unverified") &&
                        Catch::Contains("--all"));
  const auto both = run("check-kernels --include-unverified --all --measurements " +
                        ptsim::test::source_path("hw_profiles/measured/h100-openxla-matmul-table.json") + " --hw " +
                        ptsim::test::source_path("hw_profiles/h100-sxm5-80gb.json"));
  CHECK(both.code == 0);
}

TEST_CASE("ptsim --help and ptsim simulate --help show usage with examples", "[cli]") {
  const auto top = run("--help");
  CHECK(top.code == 0);
  CHECK_THAT(top.out, Catch::Contains("simulate"));
  const auto sim = run("simulate --help");
  CHECK(sim.code == 0);
  CHECK_THAT(sim.out, Catch::Contains("Examples:"));
  CHECK_THAT(sim.out, Catch::Contains("--tensor-model-parallel-size"));
}

TEST_CASE("ptsim collective reports nccl-tests' figures as a table and JSON", "[cli]") {
  const std::string json = ptsim::test::scratch_path("collective.json");
  const auto r = run("collective --hw " + ptsim::test::source_path("hw_profiles/a100-sxm4-80gb.json") +
                     " --op all_reduce,all_gather --ranks 8,16 --sizes 1M,1G --json " + json);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("busbw GB/s"));
  const auto j = nlohmann::json::parse(slurp(json));
  REQUIRE(j.at("results").size() == 2 * 2 * 2);
  for (const auto& row : j.at("results")) {
    const double n = row.at("ranks").get<double>();
    const double algbw = row.at("bytes").get<double>() / row.at("time_s").get<double>() / 1e9;
    CHECK(row.at("algbw_GBps").get<double>() == Approx(algbw));
    // nccl-tests: busbw = algbw · 2(n−1)/n for all-reduce, · (n−1)/n for all-gather.
    const double factor = row.at("op") == "all_reduce" ? 2 * (n - 1) / n : (n - 1) / n;
    CHECK(row.at("busbw_GBps").get<double>() == Approx(algbw * factor));
    CHECK_FALSE(row.at("algorithm").get<std::string>().empty());
  }
  const auto bad = run("collective --hw " + ptsim::test::source_path("hw_profiles/a100-sxm4-80gb.json") +
                       " --op allreduce --ranks 8 --sizes 1M");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--op: 'allreduce' is not a collective"));
  const auto size = run("collective --hw " + ptsim::test::source_path("hw_profiles/a100-sxm4-80gb.json") +
                        " --ranks 8 --sizes 1X");
  CHECK(size.code == 2);
  CHECK_THAT(size.err, Catch::Contains("--sizes: '1X' is not a size"));
}

TEST_CASE("ptsim collective takes nccl-tests' size ranges and columns, and compares with a measured log", "[cli]") {
  const std::string hw = ptsim::test::source_path("hw_profiles/h100-sxm5-80gb.json");
  SECTION("-b 1M -e 64M -f 4 is 1, 4, 16 and 64 MiB; the count column is nccl-tests'") {
    const std::string json = ptsim::test::scratch_path("range.json");
    const auto r = run("collective --hw " + hw + " --op all_reduce,all_gather --ranks 16 -b 1M -e 64M -f 4 -d bfloat16"
                       " --format nccl-tests --json " + json);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(slurp(json));
    REQUIRE(j.at("results").size() == 8);
    const std::uint64_t sizes[] = {1ull << 20, 4ull << 20, 16ull << 20, 64ull << 20};
    for (std::size_t i = 0; i < 4; ++i) {
      const auto& ar = j.at("results")[i];
      const auto& ag = j.at("results")[4 + i];
      CHECK(ar.at("bytes").get<std::uint64_t>() == sizes[i]);
      CHECK(ar.at("count").get<std::uint64_t>() == sizes[i] / 2);       // all-reduce: the buffer's elements
      CHECK(ag.at("count").get<std::uint64_t>() == sizes[i] / 2 / 16);  // all-gather: per rank
    }
    // nccl-tests' row: size, count, type, redop, root, then time, algbw, busbw, #wrong twice.
    CHECK_THAT(r.out, Catch::Contains("     1048576        524288  bfloat16     sum      -1"));
    CHECK_THAT(r.out, Catch::Contains("    67108864       2097152  bfloat16    none      -1"));
  }
  SECTION("--compare: every row of the log beside its prediction") {
    const std::string log = ptsim::test::source_path("tests/data/nccl-tests/h100-hgx-2x8-ib-ndr-allreduce.log");
    const std::string json = ptsim::test::scratch_path("compare.json");
    const auto r = run("collective --hw " + hw + " --compare " + log + " --op all_reduce --json " + json);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(slurp(json));
    CHECK(j.at("logs")[0].at("ranks").get<int>() == 16);
    CHECK(j.at("logs")[0].at("nodes").get<int>() == 2);
    bool seen = false;
    for (const auto& row : j.at("results")) {
      CHECK(row.at("ranks").get<int>() == 16);
      const double measured = row.at("measured_busbw_GBps").get<double>();
      const double predicted = row.at("busbw_GBps").get<double>();
      const double error = row.at("busbw_error_pct").get<double>();
      CHECK(error == Approx((row.at("measured_time_s").get<double>() / row.at("time_s").get<double>() - 1) * 100));
      if (measured > 10) CHECK(error == Approx((predicted / measured - 1) * 100).margin(0.5));
      // The log's line for 1 GiB: "1073741824 268435456 float sum -1 4484.9 239.41 448.90 0 …".
      if (row.at("bytes").get<std::uint64_t>() == (1ull << 30)) {
        seen = true;
        CHECK(measured == Approx(448.90));
        CHECK(row.at("measured_time_s").get<double>() == Approx(4484.9e-6));
      }
    }
    CHECK(seen);
    CHECK_THAT(r.out, Catch::Contains("all_reduce on 16 ranks (2 nodes)"));
  }
  SECTION("--algo predicts with the algorithm NCCL_ALGO forced") {
    // gj-aion's log in NVIDIA/nccl-tests #309 ran NCCL_ALGO=Ring on 2 × 8 H100.
    const std::string log = ptsim::test::source_path("tests/data/nccl-tests/h100-2x8-ib-ndr-allreduce-ring.log");
    const std::string json = ptsim::test::scratch_path("compare-ring.json");
    const auto r = run("collective --hw " + hw + " --compare " + log + " --op all_reduce --algo ring --json " + json);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(slurp(json));
    REQUIRE(j.at("results").size() == 14);
    for (const auto& row : j.at("results")) CHECK(row.at("algorithm").get<std::string>().starts_with("ring/"));
    // NVLS needs one NVLink domain: on 16 ranks of two nodes NCCL cannot run it; nothing is printed.
    const auto nvls = run("collective --hw " + hw + " --ranks 16 --sizes 1G --algo nvls");
    CHECK(nvls.code == 2);
    CHECK(nvls.out.empty());
    CHECK_THAT(nvls.err, Catch::Contains("--algo nvls: NCCL does not run all_reduce with it on 16 ranks"));
    const auto bad = run("collective --hw " + hw + " --ranks 16 --sizes 1G --algo NVLSTree");
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err,
               Catch::Contains("--algo = NVLSTree is not an algorithm; use one of ring, tree, nvls, nvls_tree"));
  }
  SECTION("--compare takes its ranks from the logs, and --ranks only for a log that cannot tell them") {
    const std::string log = ptsim::test::source_path("tests/data/nccl-tests/h100-hgx-2x8-ib-ndr-allreduce.log");
    const auto r = run("collective --hw " + hw + " --compare " + log + " --op all_reduce --ranks 8");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("lists 16 ranks, not the 8 of --ranks") && Catch::Contains("drop --ranks"));
    const auto sizes = run("collective --hw " + hw + " --compare " + log + " --op all_reduce --sizes 1G");
    CHECK(sizes.code == 2);
    CHECK_THAT(sizes.err, Catch::Contains("--compare takes the sizes from the logs; drop --sizes"));
    // CoreWeave's A100 log keeps 5 of its 128 rank lines.
    const std::string cut =
        ptsim::test::source_path("tests/data/nccl-tests/a100-coreweave-16x8-hdr-allreduce.oldfmt.log");
    const std::string a100 = ptsim::test::source_path("hw_profiles/a100-sxm4-80gb.json");
    const auto without = run("collective --hw " + a100 + " --compare " + cut + " --op all_reduce");
    CHECK(without.code == 2);
    CHECK_THAT(without.err, Catch::Contains("give the count with --ranks N"));
    const auto with = run("collective --hw " + a100 + " --compare " + cut + " --op all_reduce --ranks 128");
    CHECK(with.code == 0);
    CHECK_THAT(with.out, Catch::Contains("all_reduce on 128 ranks"));
  }
}

TEST_CASE("ptsim simulate takes straggler and degraded-link what-ifs", "[cli]") {
  const auto ok = run(tiny_run() + " --gpus 16 --tp 2 --pp 2 --global-batch-size 16 --slow-gpu 3:1.5 "
                                   "--slow-link nic:5:4");
  CHECK(ok.code == 0);
  CHECK_THAT(ok.out, Catch::Contains("(explicit, 16 ranks)"));
  const auto form = run(tiny_run() + " --gpus 16 --global-batch-size 16 --slow-link nic:5");
  CHECK(form.code == 2);
  CHECK_THAT(form.err, Catch::Contains("--slow-link nic:5: expected KIND:INDEX:FACTOR"));
  const auto rank = run(tiny_run() + " --gpus 16 --global-batch-size 16 --slow-gpu 40:2");
  CHECK(rank.code == 2);
  CHECK_THAT(rank.err, Catch::Contains("rank 40 does not exist"));
  const auto order = run(tiny_run() + " --gpus 16 --tp 2 --pp 2 --global-batch-size 16 --rank-order tp-pp");
  CHECK(order.code == 2);
  CHECK_THAT(order.err, Catch::Contains("--rank-order: rank order 'tp-pp'") && Catch::Contains("leaves out dp"));
}

TEST_CASE("ptsim kernels lists the step's kernels and writes the micro-benchmark list", "[cli]") {
  const std::string json = ptsim::test::scratch_path("kernels.json");
  const std::string list = ptsim::test::scratch_path("kernels.txt");
  const auto r = run("kernels --model " + ptsim::test::source_path("configs/models/tiny.json") + " --hw " +
                     ptsim::test::source_path("hw_profiles/h100-sxm5-80gb.json") +
                     " --gpus 4 --tp 2 --pp 2 --global-batch-size 8 --json " + json + " --microbench-list " + list);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(json));
  // tiny: 4 layers, hidden 256, 8 heads, ffn 1024, vocab 1024, seq 128; TP 2,
  // PP 2, DP 1, micro-batch 1: 8 micro-batches. The FC1 GEMM is 128 tokens ×
  // 512 (1024/2) × 256, once per layer and micro-batch: 2 layers × 8 × 2
  // stages = 32 calls. FC2's input-gradient GEMM has the same shape (32 more),
  // and so has the LM head (vocabulary 1024/2 = 512 by 256), once per
  // micro-batch on the last stage (8): 72 calls of that one kernel.
  bool fc1 = false;
  for (const auto& k : j.at("kernels")) {
    const auto& names = k.at("names");
    if (std::find(names.begin(), names.end(), "fwd.mlp.fc1") == names.end()) continue;
    fc1 = true;
    CHECK(k.at("shape").at("m").get<int>() == 128);
    CHECK(k.at("shape").at("n").get<int>() == 512);
    CHECK(k.at("shape").at("k").get<int>() == 256);
    CHECK(k.at("count").get<int>() == 72);
    CHECK(k.at("flops").get<double>() == 2.0 * 128 * 512 * 256);
  }
  CHECK(fc1);
  // Each kernel's burst and sustained time: the H100 profile keeps 0.6892 of
  // its burst tensor-core rate and all of its memory rate, so a kernel takes
  // between 1 and 1/0.6892 times its burst time (launch and bytes unchanged).
  CHECK_THAT(r.out, Catch::Contains("sustained rates: tensor cores 69% of burst (bf16), memory 100%"));
  for (const auto& k : j.at("kernels")) {
    const double burst = k.at("burst_time_s").get<double>(), sustained = k.at("time_s").get<double>();
    CHECK(sustained >= burst);
    CHECK(sustained <= burst / 0.6892 * (1 + 1e-12));
  }
  CHECK_THAT(slurp(list), Catch::Contains("gemm bf16 128 512 256 1"));
  CHECK_THAT(slurp(list), Catch::Contains("attention bf16 4 128 128 32 causal forward"));
}

TEST_CASE("ptsim simulate models the host by default and says when it is switched off on a host-bound step",
          "[cli][host]") {
  // The tiny model's kernels run for microseconds, far less than the default
  // 65 µs a host spends issuing each: the default run is host-bound.
  const std::string json = ptsim::test::scratch_path("tiny-host.json");
  const auto plain = run(tiny_run() + " --gpus 1 --global-batch-size 2 --json " + json);
  REQUIRE(plain.code == 0);
  CHECK_THAT(plain.out, Catch::Contains("host issue"));
  CHECK_THAT(plain.out, !Catch::Contains("· host"));  // the default is not announced
  const auto j = nlohmann::json::parse(slurp(json));
  CHECK(j.at("run").at("host_overhead_us").get<double>() == Approx(65));
  CHECK(j.at("breakdown_s").at("host_issue").get<double>() > 0);
  const auto off = run(tiny_run() + " --gpus 1 --global-batch-size 2 --host-overhead-us 0");
  REQUIRE(off.code == 0);
  CHECK_THAT(off.out, Catch::Contains("· host not modelled"));
  CHECK_THAT(off.out, Catch::Contains("this step may be host-bound, which --host-overhead-us 0 leaves out"));
  CHECK_THAT(off.out, !Catch::Contains("host issue"));
  const auto other = run(tiny_run() + " --gpus 1 --global-batch-size 2 --host-overhead-us 100");
  REQUIRE(other.code == 0);
  CHECK_THAT(other.out, Catch::Contains("· host 100.0 µs per task"));
  // Not a number of microseconds: refused with the flag named.
  const auto bad = run(tiny_run() + " --gpus 1 --global-batch-size 2 --host-overhead-us -3");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--host-overhead-us"));
  // CUDA graphs: announced in the header and the report, the host's share gone
  // with a graph of the whole iteration.
  const std::string graphed_json = ptsim::test::scratch_path("tiny-graphs.json");
  const auto layers = run(tiny_run() +
                          " --gpus 1 --global-batch-size 2 --cuda-graph-impl transformer_engine "
                          "--cuda-graph-modules attn,mlp --json " +
                          graphed_json);
  REQUIRE(layers.code == 0);
  CHECK_THAT(layers.out, Catch::Contains("· CUDA graphs (transformer_engine) of attn, mlp"));
  const auto g = nlohmann::json::parse(slurp(graphed_json));
  CHECK(g.at("run").at("cuda_graph_impl") == "transformer_engine");
  CHECK(g.at("run").at("cuda_graph_modules") == nlohmann::json::array({"attn", "mlp"}));
  CHECK(g.at("step_time_s").get<double>() < j.at("step_time_s").get<double>());
  const auto full = run(tiny_run() + " --gpus 1 --global-batch-size 2 --cuda-graph-impl full_iteration");
  REQUIRE(full.code == 0);
  CHECK_THAT(full.out, Catch::Contains("· CUDA graph of the whole iteration"));
  CHECK_THAT(full.out, !Catch::Contains("may be host-bound"));
  CHECK(j.at("run").at("cuda_graph_impl") == "none");
}

TEST_CASE("ptsim plan's CSV ends with each candidate's host-issue time, its parts summing to the step", "[cli][host]") {
  const std::string csv = ptsim::test::scratch_path("plan-host.csv");
  const auto r = run("plan --model " + ptsim::test::source_path("configs/models/tiny.json") + " --hw " +
                     ptsim::test::source_path("hw_profiles/a100-sxm4-80gb.json") +
                     " --gpus 8 --global-batch-size 16 --top 3 -q --csv " + csv);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("   host "));
  std::ifstream in(csv);
  std::string header, line;
  REQUIRE(std::getline(in, header));
  CHECK(header.substr(header.size() - std::string(",zero,host_issue_s").size()) == ",zero,host_issue_s");
  int rows = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    REQUIRE(cells.size() == 21);
    // step = compute + bubble + exposed + optimizer + host (columns 2, 5–8 and the last).
    const double parts = std::stod(cells[4]) + std::stod(cells[5]) + std::stod(cells[6]) + std::stod(cells[7]) +
                         std::stod(cells[20]);
    CHECK(parts == Approx(std::stod(cells[1])).epsilon(1e-9));
    CHECK(std::stod(cells[20]) > 0);  // the tiny model is host-bound at the default
    ++rows;
  }
  CHECK(rows == 3);
}

TEST_CASE("A sweep's points, sharing their candidates, equal each point planned alone", "[cli][plan]") {
  // Three variants of one profile: two share the NVLink domain size (and so
  // the candidates of each GPU count), the third's domain differs.
  const std::string model = ptsim::test::source_path("configs/models/tiny.json");
  const auto original = nlohmann::json::parse(slurp(ptsim::test::source_path("hw_profiles/a100-sxm4-80gb.json")));
  const std::vector<std::pair<std::string, nlohmann::json>> variants = {{"base", nlohmann::json::object()},
                                                                        {"slow NIC",
                                                                         {{"/network/nic/bandwidth_GBps", 6.25}}},
                                                                        {"domain 16",
                                                                         {{"/network/nvlink/domain_gpus", 16}}}};
  nlohmann::json spec = {{"model", model}, {"global_batch_size", 32}, {"gpus", {8, 16}}};
  for (const auto& [name, overrides] : variants)
    spec["hardware"].push_back({{"name", name},
                                {"profile", ptsim::test::source_path("hw_profiles/a100-sxm4-80gb.json")},
                                {"overrides", overrides}});
  const std::string spec_path = ptsim::test::scratch_path("shared-sweep.json");
  const std::string out = ptsim::test::scratch_path("shared-sweep-out.json");
  std::ofstream(spec_path) << spec.dump();
  const auto sweep = run("sweep " + spec_path + " -q --threads 2 --json " + out);
  REQUIRE(sweep.code == 0);
  const auto points = nlohmann::json::parse(slurp(out)).at("points");
  REQUIRE(points.size() == 6);
  std::size_t i = 0;
  for (const auto& [name, overrides] : variants) {
    nlohmann::json hw = original;
    for (const auto& [pointer, value] : overrides.items()) hw[nlohmann::json::json_pointer(pointer)] = value;
    const std::string hw_path = ptsim::test::scratch_path("shared-sweep-hw.json");
    std::ofstream(hw_path) << hw.dump();
    for (const int gpus : {8, 16}) {
      INFO(name << " × " << gpus);
      const std::string plan_out = ptsim::test::scratch_path("shared-sweep-plan.json");
      const auto plan =
          run(fmt::format("plan --model {} --hw {} --gpus {} --global-batch-size 32 --top 1 -q "
                          "--threads 1 --json {}",
                          model, hw_path, gpus, plan_out));
      REQUIRE(plan.code == 0);
      const auto alone = nlohmann::json::parse(slurp(plan_out));
      const auto& point = points.at(i++);
      CHECK(point.at("gpus") == gpus);
      CHECK(point.at("label") == alone.at("candidates").at(0).at("label"));
      CHECK(point.at("step_time_s") == alone.at("candidates").at(0).at("step_time_s"));
      CHECK(point.at("searched") == alone.at("searched"));
      CHECK(point.at("simulated") == alone.at("simulated"));
    }
  }
}

TEST_CASE("ptsim simulate --power-limit-w slows the tensor cores by the measured throughput at that limit",
          "[cli][power]") {
  const std::string base = "simulate --model " + ptsim::test::source_path("configs/models/llama3-8b.json") + " --hw " +
                           ptsim::test::source_path("hw_profiles/h100-sxm5-80gb.json") +
                           " --gpus 8 --tp 2 --global-batch-size 8 --micro-batch-size 1 --seq-length 2048 --json ";
  const std::string full = ptsim::test::scratch_path("power-700.json");
  const std::string capped = ptsim::test::scratch_path("power-500.json");
  REQUIRE(run(base + full).code == 0);
  const auto r = run(base + capped + " --power-limit-w 500");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("on 8 × H100-SXM5-80GB at 500 W (1 node)"));
  const double at_700 = nlohmann::json::parse(slurp(full)).at("step_time_s").get<double>();
  const double at_500 = nlohmann::json::parse(slurp(capped)).at("step_time_s").get<double>();
  // Tensor-core kernels take 30271.0 / 27705.3 as long (arXiv:2603.16164,
  // Table 4); nothing else slows, so the step grows by at most that.
  CHECK(at_500 > at_700 * 1.02);
  CHECK(at_500 <= at_700 * 30271.0 / 27705.3 * (1 + 1e-9));
  const auto bad = run(base + capped + " --power-limit-w 900");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--power-limit-w 900") && Catch::Contains("outside 200 … 700 W"));
}

TEST_CASE("A sweep entry's power_limit_W runs its GPUs under that limit, and a limit out of range names the entry",
          "[cli][power]") {
  const std::string model = ptsim::test::source_path("configs/models/llama3-8b.json");
  const std::string profile = ptsim::test::source_path("hw_profiles/h100-sxm5-80gb.json");
  const auto spec_with = [&](const nlohmann::json& limit) {
    nlohmann::json spec = {{"model", model}, {"global_batch_size", 16}, {"seq_length", 2048}, {"gpus", {8}}};
    spec["hardware"].push_back({{"name", "700 W"}, {"profile", profile}});
    spec["hardware"].push_back({{"name", "capped"}, {"profile", profile}, {"power_limit_W", limit}});
    const std::string path = ptsim::test::scratch_path("power-sweep.json");
    std::ofstream(path) << spec.dump();
    return path;
  };
  const std::string out = ptsim::test::scratch_path("power-sweep-out.json");
  REQUIRE(run("sweep " + spec_with(400) + " -q --json " + out).code == 0);
  const auto points = nlohmann::json::parse(slurp(out)).at("points");
  REQUIRE(points.size() == 2);
  CHECK(points[1].at("hardware") == "capped");
  // 400 W of 700: 24,853.4 of 30,271.0 tokens/s (arXiv:2603.16164, Table 4).
  CHECK(points[1].at("step_time_s").get<double>() > points[0].at("step_time_s").get<double>());
  CHECK(points[1].at("step_time_s").get<double>() <=
        points[0].at("step_time_s").get<double>() * 30271.0 / 24853.4 * (1 + 1e-9));
  const auto bad = run("sweep " + spec_with(100) + " -q");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("/hardware/1/power_limit_W") && Catch::Contains("outside 200 … 700 W"));
}

TEST_CASE("ptsim kernels shows multi-latent attention's value head dim and leaves it out of the micro-benchmark list",
          "[cli]") {
  // DeepSeek-V3 at 4096 tokens, one sequence on one GB300: 128 heads whose
  // queries and keys have 128 + 64 dims and whose values have 128.
  const auto [out, text] = kernels_listing("deepseek-v3", "gb300-nvl72",
                                           "--gpus 1 --global-batch-size 1 --seq-length 4096", "kernels-mla.txt");
  CHECK_THAT(out, Catch::Contains("bh 128 · s 4096 · d 192/128 causal fwd"));
  CHECK_THAT(out, Catch::Contains("bh 128 · s 4096 · d 192/128 causal bwd"));
  CHECK_THAT(text,
             Catch::Contains("# not measurable (value head dim 128): attention bf16 128 4096 4096 192 causal forward"));
  CHECK_THAT(text, !Catch::Contains("\nattention "));
}

TEST_CASE("ptsim kernels shows a context-parallel block's query and key lengths, kept out of the micro-benchmark list",
          "[cli]") {
  // Llama 3 8B, one sequence of 16k tokens over 4 GPUs under
  // PyTorch's context parallelism: after the causal local block, each step
  // attends 4096 queries to half a block of keys, 2048.
  const auto [out, text] = kernels_listing("llama3-8b", "h100-sxm5-80gb",
                                           "--gpus 4 --cp 4 --global-batch-size 1 --seq-length 16384 "
                                           "--kernel-fusion compiled --attention-backend flash2",
                                           "kernels-cp.txt");
  CHECK_THAT(out, Catch::Contains("bh 32 · s 4096 · d 128 causal fwd"));
  CHECK_THAT(out, Catch::Contains("bh 32 · s 4096×2048 · d 128 fwd"));
  // ptsim-microbench times as many keys as queries: the local causal block
  // is listed, the half blocks are not.
  CHECK_THAT(text, Catch::Contains("attention bf16 32 4096 4096 128 causal forward"));
  CHECK_THAT(text, !Catch::Contains("): attention bf16 32 4096 4096 128 causal forward"));
  CHECK_THAT(text,
             Catch::Contains("# not measurable (2048 keys for 4096 queries): attention bf16 32 4096 2048 128 full"));
}

TEST_CASE("ptsim kernels names windowed and FP8 attention, and leaves them out of the micro-benchmark list", "[cli]") {
  // gpt-oss-120b at 4096 tokens, one sequence on one GB300, MXFP8 with FP8
  // attention: 64 heads of 64; its even layers attend over windows of 128.
  const auto [out, text] = kernels_listing("gpt-oss-120b", "gb300-nvl72",
                                           "--gpus 1 --global-batch-size 1 --seq-length 4096 --precision fp8 "
                                           "--fp8-recipe mxfp8 --fp8-dot-product-attention",
                                           "kernels-window.txt");
  CHECK_THAT(out, Catch::Contains("bh 64 · s 4096 · d 64 window 128 fwd"));
  CHECK_THAT(out, Catch::Contains("bh 64 · s 4096 · d 64 causal bwd"));
  CHECK_THAT(text, Catch::Contains("# not measurable (sliding window): attention mxfp8 64 4096 128 64 full forward"));
  CHECK_THAT(text,
             Catch::Contains("# not measurable (FP8 attention): attention mxfp8 64 4096 4096 64 causal backward"));
  CHECK_THAT(text, !Catch::Contains("\nattention "));
}

// Hardware profiles: the shipped ones load; figures without sources and other
// faults are rejected.
#include "ptsim/config/load_hardware.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "ptsim/common/error.hpp"
#include "test_support.hpp"

using namespace ptsim;
using nlohmann::json;

namespace {
json read(const std::string& stem) {
  std::ifstream in(test::source_path("hw_profiles/" + stem + ".json"));
  return json::parse(in);
}
}  // namespace

TEST_CASE("Shipped profiles load with their figures in SI units", "[config]") {
  for (const char* stem : {"a100-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb", "b200-sxm-180gb", "b300-sxm-288gb",
                           "dgx-a100-superpod", "dgx-h100-superpod", "gb200-nvl72", "gb300-nvl72", "h100-roce-llama3"}) {
    const auto hw = test::shipped_hardware(stem);
    CHECK(hw.name == stem);
    CHECK(hw.sources.size() >= 20);
  }
  const auto a100 = test::shipped_hardware("a100-sxm4-80gb");
  CHECK(a100.gpu.peak_flops(Dtype::Bf16) == 312e12);
  CHECK(a100.gpu.memory_bytes == 80.0 * 1024 * 1024 * 1024);
  CHECK(a100.gpus_per_node == 8);
  CHECK(a100.nvlink.domain_gpus == 8);
  CHECK(a100.nic.bandwidth_bytes_per_s == 25e9);  // HDR 200 Gb/s
  CHECK(a100.nvlink.latency_s == Approx(3.4e-6));
  CHECK_FALSE(a100.nvlink.nvls_efficiency);       // no NVLink SHARP on A100's NVSwitch
  CHECK(test::shipped_hardware("h100-sxm5-80gb").nvlink.nvls_latency_s == Approx(140e-6));
  CHECK_THROWS_WITH(a100.gpu.peak_flops(Dtype::Fp8), Catch::Contains("has no fp8 peak rate"));
  // GB200 NVL72: 72 GPUs in one NVLink domain, trays of 4.
  const auto nvl72 = test::shipped_hardware("gb200-nvl72");
  CHECK(nvl72.nvlink.domain_gpus == 72);
  CHECK(nvl72.gpus_per_node == 4);
  // Blackwell Ultra: B300 and GB300 keep the B200/GB200 dense bf16 rates;
  // 275040 and 284208 MiB in nvidia-smi; ConnectX-8 at 800 Gb/s per GPU.
  const auto b300 = test::shipped_hardware("b300-sxm-288gb");
  CHECK(b300.gpu.peak_flops(Dtype::Bf16) == 2250e12);
  CHECK(b300.gpu.memory_bytes == Approx(275040.0 * 1024 * 1024).epsilon(1e-4));
  CHECK(b300.nic.bandwidth_bytes_per_s == 100e9);
  CHECK(b300.gpus_per_node == 8);
  const auto gb300 = test::shipped_hardware("gb300-nvl72");
  CHECK(gb300.gpu.peak_flops(Dtype::Fp8) == 5000e12);
  CHECK(gb300.gpu.memory_bytes == Approx(284208.0 * 1024 * 1024).epsilon(1e-4));
  CHECK(gb300.nvlink.domain_gpus == 72);
  CHECK(gb300.gpus_per_node == 4);
  CHECK(gb300.nic.bandwidth_bytes_per_s == 100e9);
  // Meta's Llama 3 cluster: pods of 3072 GPUs, 1:7 between pods.
  const auto roce = test::shipped_hardware("h100-roce-llama3");
  CHECK(roce.fabric.pod_gpus == 3072);
  CHECK(roce.fabric.oversubscription == 7);
  CHECK(roce.nic.bandwidth_bytes_per_s == 50e9);
  // SHARP switches, but NCCL_COLLNET_ENABLE at NCCL's default of 0.
  const auto superpod = test::shipped_hardware("dgx-h100-superpod");
  CHECK(superpod.fabric.in_network_reduction);
  CHECK_FALSE(superpod.fabric.nccl_collnet_enable);
}

TEST_CASE("A GPU's FP8 GEMMs take any layout at compute capability 10.x and from 13, as Transformer Engine reads it",
          "[config]") {
  // transformer_engine/pytorch/utils.py is_non_tn_fp8_gemm_supported at
  // d0067d0da6: (10, 0) <= cc < (12, 0) or cc >= (13, 0). Hopper (9.0) and
  // the consumer Blackwell parts (12.x) are TN-only.
  hardware::GpuSpec gpu;
  CHECK_FALSE(gpu.fp8_gemm_any_layout());  // no compute capability: taken to be TN-only
  for (const double cc : {8.0, 8.9, 9.0, 12.0, 12.1}) {
    gpu.compute_capability = cc;
    CHECK_FALSE(gpu.fp8_gemm_any_layout());
  }
  for (const double cc : {10.0, 10.3, 11.0, 13.0}) {
    gpu.compute_capability = cc;
    CHECK(gpu.fp8_gemm_any_layout());
  }
  CHECK(test::shipped_hardware("b200-sxm-180gb").gpu.fp8_gemm_any_layout());
  CHECK(test::shipped_hardware("gb300-nvl72").gpu.compute_capability == 10.3);
  CHECK_FALSE(test::shipped_hardware("h100-sxm5-80gb").gpu.fp8_gemm_any_layout());
  // Read with a source like every figure, within 1 … 99.
  json j = read("h100-sxm5-80gb");
  j["gpu"]["compute_capability"] = 0.5;
  CHECK_THROWS_WITH(config::parse_hardware(j, "h100.json"), Catch::Contains("compute_capability"));
  j = read("h100-sxm5-80gb");
  j["sources"].erase("/gpu/compute_capability");
  CHECK_THROWS_WITH(config::parse_hardware(j, "h100.json"), Catch::Contains("/gpu/compute_capability has no source"));
}

TEST_CASE("Profiles are rejected when a figure has no source or a key is wrong", "[config]") {
  json j = read("a100-sxm4-80gb");
  SECTION("figure without a source") {
    j["sources"].erase("/gpu/memory_GiB");
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("/gpu/memory_GiB has no source"));
  }
  SECTION("source for nothing") {
    j["sources"]["/gpu/clock_MHz"] = "datasheet";
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("\"/gpu/clock_MHz\", which is neither a numeric figure"));
  }
  SECTION("unknown key") {
    j["gpu"]["tflops"] = 5;
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"), Catch::Contains("unknown key 'tflops' in /gpu"));
  }
  SECTION("negative bandwidth") {
    j["network"]["nic"]["bandwidth_GBps"] = -25;
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("/network/nic/bandwidth_GBps = -25 is out of range"));
  }
  SECTION("NaN-like bandwidth") {
    j["network"]["nvlink"]["bandwidth_GBps"] = "fast";
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("/network/nvlink/bandwidth_GBps = \"fast\" must be a number"));
  }
  SECTION("oversubscription below one") {
    j["network"]["fabric"]["oversubscription"] = 0.5;
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("/network/fabric/oversubscription = 0.5 is out of range"));
  }
  SECTION("bad topology") {
    j["network"]["fabric"]["topology"] = "torus";
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("/network/fabric/topology = \"torus\" is not one of the accepted "
                                      "values: rail_optimized, fat_tree"));
  }
  SECTION("CollNet enabled on switches without SHARP") {
    j["network"]["fabric"]["nccl_collnet_enable"] = true;
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("nccl_collnet_enable = true") && Catch::Contains("in_network_reduction is false"));
  }
  SECTION("an NVLS latency on a profile without NVLS") {
    j["network"]["nvlink"]["nvls_latency_us"] = 140;
    j["sources"]["/network/nvlink/nvls_latency_us"] = "x";
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("/network/nvlink/nvls_latency_us = 140 needs nvls_efficiency"));
  }
  SECTION("a HybridEP table whose ranks are out of order or whose rates do not match them") {
    j["network"]["nvlink"]["hybridep"] = {{"sms", 32},
                                          {"ranks", {8, 16}},
                                          {"dispatch_GBps", {700, 650}},
                                          {"combine_GBps", {680, 600}}};
    for (const char* key : {"sms", "ranks", "dispatch_GBps", "combine_GBps"})
      j["sources"][std::string("/network/nvlink/hybridep/") + key] = "x";
    CHECK(config::parse_hardware(j, "hw.json").nvlink.hybridep->combine_bytes_per_s[1] == Approx(600e9));
    j["network"]["nvlink"]["hybridep"]["ranks"] = {16, 8};
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("/network/nvlink/hybridep/ranks") && Catch::Contains("ascending"));
    j["network"]["nvlink"]["hybridep"]["ranks"] = {8, 16};
    j["network"]["nvlink"]["hybridep"]["combine_GBps"] = {680};
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"), Catch::Contains("/network/nvlink/hybridep/combine_GBps") &&
                                                                Catch::Contains("has 1 values for 2 entries of ranks"));
  }
  SECTION("a HybridEP table across domains counts domains, not ranks") {
    j["network"]["nic"]["hybridep"] = {{"sms", 8},
                                       {"domains", {2, 4, 8}},
                                       {"dispatch_GBps", {76.8, 54.5, 50.55}},
                                       {"combine_GBps", {68, 56.4, 51.03}}};
    for (const char* key : {"sms", "domains", "dispatch_GBps", "combine_GBps"})
      j["sources"][std::string("/network/nic/hybridep/") + key] = "x";
    const auto hw = config::parse_hardware(j, "hw.json");
    REQUIRE(hw.nic.hybridep);
    CHECK(hw.nic.hybridep->members == std::vector<double>{2, 4, 8});
    CHECK(hw.nic.hybridep->dispatch_bytes_per_s[0] == Approx(76.8e9));
    j["network"]["nic"]["hybridep"]["ranks"] = {16, 32, 64};
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("/network/nic/hybridep") && Catch::Contains("accepted keys: sms, domains"));
    j["network"]["nic"]["hybridep"].erase("ranks");
    j["network"]["nic"]["hybridep"]["domains"] = {1, 2, 4};
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"), Catch::Contains("/network/nic/hybridep/domains"));
  }
  SECTION("pods without a level above them") {
    j["network"]["fabric"]["levels"] = 2;
    j["network"]["fabric"]["pod_gpus"] = 64;
    j["sources"]["/network/fabric/pod_gpus"] = "x";
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"), Catch::Contains("pod_gpus = 64 needs levels = 3"));
  }
  SECTION("zero memory") {
    j["gpu"]["memory_GiB"] = 0;
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"), Catch::Contains("/gpu/memory_GiB = 0 is out of range"));
  }
  SECTION("calibration ratio beyond any measurement") {
    json h = read("h100-sxm5-80gb");
    h["calibration"]["gemm"]["bf16"]["ratio"][3] = 1e300;
    CHECK_THROWS_WITH(config::parse_hardware(h, "hw.json"),
                      Catch::Contains("/calibration/gemm/bf16/ratio/3 = 1e+300 must be a number in [0.0001, 10000]; "
                                      "a measured/modelled ratio outside means a wrong peak"));
    h["calibration"]["gemm"]["bf16"]["ratio"][3] = 1.0;
    h["calibration"]["gemm"]["bf16"]["log2_m"][0] = -1;
    CHECK_THROWS_WITH(config::parse_hardware(h, "hw.json"), Catch::Contains("/calibration/gemm/bf16/log2_m/0 = -1 must be a number in [0, 64]; the axes are log2 of a size"));
    h["calibration"]["gemm"]["bf16"]["log2_m"][0] = h["calibration"]["gemm"]["bf16"]["log2_m"][1];
    CHECK_THROWS_WITH(config::parse_hardware(h, "hw.json"),
                      Catch::Contains("/calibration/gemm/bf16/log2_m/1 = ") &&
                          Catch::Contains("does not exceed the value before it"));
  }
  SECTION("calibration memory efficiency of zero") {
    json h = read("h100-sxm5-80gb");
    h["calibration"]["memory"]["copy"] = {{"log2_bytes", {20, 30}}, {"efficiency", {0, 0.9}}};
    CHECK_THROWS_WITH(config::parse_hardware(h, "hw.json"),
                      Catch::Contains("/calibration/memory/copy/efficiency/0 = 0 must be a number in [1e-06, 100]"));
  }
  SECTION("a scalar GEMM calibration holds one ratio") {
    // The shipped A100 profile: one ratio fitted to Vidur's measured linear layers.
    json a = read("a100-sxm4-80gb");
    const auto shipped = config::parse_hardware(a, "hw.json");
    REQUIRE(shipped.calibration);
    CHECK(shipped.calibration->gemm_fit == hardware::GemmFit::Scalar);
    CHECK(shipped.calibration->gemm.at("bf16").ratio.size() == 1);
    // A grid table under "scalar" is refused; "grid" is the default.
    json h = read("h100-sxm5-80gb");
    CHECK(config::parse_hardware(h, "hw.json").calibration->gemm_fit == hardware::GemmFit::Grid);
    h["calibration"]["gemm_fit"] = "scalar";
    CHECK_THROWS_WITH(config::parse_hardware(h, "hw.json"),
                      Catch::Contains("/calibration/gemm/bf16") && Catch::Contains("gemm_fit \"scalar\" holds one ratio"));
    h["calibration"]["gemm_fit"] = "cubic";
    CHECK_THROWS_WITH(config::parse_hardware(h, "hw.json"), Catch::Contains("gemm_fit = \"cubic\""));
  }
  SECTION("cuDNN attention efficiency without its pair") {
    json h = read("h100-sxm5-80gb");
    h["gpu"]["attention_efficiency"].erase("cudnn_backward");
    h["sources"].erase("/gpu/attention_efficiency/cudnn_backward");
    CHECK_THROWS_WITH(config::parse_hardware(h, "hw.json"),
                      Catch::Contains("cudnn_backward") && Catch::Contains("needs both"));
    // Both present, as shipped: loaded as given.
    const auto shipped = config::parse_hardware(read("h100-sxm5-80gb"), "hw.json");
    REQUIRE(shipped.gpu.cudnn_attention);
    CHECK(shipped.gpu.cudnn_attention->forward == 0.60);
    CHECK(shipped.gpu.cudnn_attention->backward == 0.52);
  }
  SECTION("FlashAttention-2 efficiency without its pair, or a table without the efficiencies it scales") {
    json h = read("h100-sxm5-80gb");
    h["gpu"]["attention_efficiency"].erase("flash2_forward");
    h["sources"].erase("/gpu/attention_efficiency/flash2_forward");
    CHECK_THROWS_WITH(config::parse_hardware(h, "hw.json"),
                      Catch::Contains("flash2_forward") && Catch::Contains("needs both"));
    h["gpu"]["attention_efficiency"].erase("flash2_backward");
    h["sources"].erase("/gpu/attention_efficiency/flash2_backward");
    CHECK_THROWS_WITH(config::parse_hardware(h, "hw.json"),
                      Catch::Contains("flash2") && Catch::Contains("add them first"));
    const auto shipped = config::parse_hardware(read("h100-sxm5-80gb"), "hw.json");
    REQUIRE(shipped.gpu.flash2_attention);
    CHECK(shipped.gpu.flash2_attention->forward == 0.3741);
    CHECK(shipped.gpu.flash2_attention->backward == 0.3256);
  }
  SECTION("FlashAttention's Triton kernel: the A100's measured figures, a table only with them") {
    const auto a100 = config::parse_hardware(read("a100-sxm4-80gb"), "hw.json");
    REQUIRE(a100.gpu.triton_attention);
    CHECK(a100.gpu.triton_attention->forward == 0.3045);  // 95 of 312 TFLOP/s
    REQUIRE(a100.gpu.triton_attention->by_sequence);
    CHECK_FALSE(config::parse_hardware(read("h100-sxm5-80gb"), "hw.json").gpu.triton_attention);
    json h = read("a100-sxm4-80gb");
    for (const char* pass : {"triton_forward", "triton_backward"}) {
      h["gpu"]["attention_efficiency"].erase(pass);
      h["sources"].erase(std::string("/gpu/attention_efficiency/") + pass);
    }
    CHECK_THROWS_WITH(config::parse_hardware(h, "hw.json"),
                      Catch::Contains("triton") && Catch::Contains("add them first"));
  }
  SECTION("efficiency above one") {
    j["gpu"]["gemm_efficiency"]["bf16"] = 1.2;
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("/gpu/gemm_efficiency/bf16 = 1.2 is out of range"));
  }
  SECTION("wrong schema") {
    j["schema"] = "ptsim-hw/1";
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"), Catch::Contains("expected \"ptsim-hw/2\""));
  }
}

TEST_CASE("Attention tables by sequence length are read with their sources, or refused", "[config]") {
  json j = read("h100-sxm5-80gb");
  const std::string table = "/gpu/attention_efficiency/by_sequence/cudnn/forward";
  SECTION("the shipped table: lengths as log2, one factor per length") {
    const auto hw = config::parse_hardware(j, "hw.json");
    REQUIRE(hw.gpu.cudnn_attention);
    REQUIRE(hw.gpu.cudnn_attention->by_sequence);
    const auto& f = hw.gpu.cudnn_attention->by_sequence->forward;
    REQUIRE(f.log2_seq.size() == 6);
    CHECK(f.log2_seq.front() == 9);  // 512 tokens
    CHECK(f.causal.size() == 6);
    CHECK(f.full.back() == 1.0);  // the 16k figure itself
  }
  SECTION("one source covers a list's numbers; a list without one is named") {
    j["sources"].erase(table + "/causal");
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"), Catch::Contains(table + "/causal/0 has no source"));
  }
  SECTION("lengths must ascend") {
    j["gpu"]["attention_efficiency"]["by_sequence"]["cudnn"]["forward"]["seq_lengths"][1] = 256;
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains(table + "/seq_lengths/1") && Catch::Contains("strictly ascending"));
  }
  SECTION("one factor per length") {
    j["gpu"]["attention_efficiency"]["by_sequence"]["cudnn"]["forward"]["full"].erase(0);
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains(table + "/full") && Catch::Contains("one figure per length (6)"));
  }
  SECTION("a factor out of range") {
    j["gpu"]["attention_efficiency"]["by_sequence"]["cudnn"]["forward"]["causal"][2] = -1;
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains(table + "/causal/2 = -1 must be a number in [0.001, 4]"));
  }
  SECTION("a cuDNN table needs cuDNN's efficiencies") {
    auto& att = j["gpu"]["attention_efficiency"];
    att.erase("cudnn_forward");
    att.erase("cudnn_backward");
    j["sources"].erase("/gpu/attention_efficiency/cudnn_forward");
    j["sources"].erase("/gpu/attention_efficiency/cudnn_backward");
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("by_sequence/cudnn") && Catch::Contains("add them first"));
  }
  SECTION("unknown keys") {
    j["gpu"]["attention_efficiency"]["by_sequence"]["sliding"] = json::object();
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"), Catch::Contains("accepted keys: flash, cudnn"));
  }
}

TEST_CASE("Attention tables at another head shape are read per kernel, or refused", "[config]") {
  json j = read("gb300-nvl72");
  auto& shapes = j["gpu"]["attention_efficiency"]["by_head_dim"];
  const auto drop_sources = [&j](const std::string& part) {
    for (auto it = j["sources"].begin(); it != j["sources"].end();)
      it = it.key().find(part) != std::string::npos ? j["sources"].erase(it) : std::next(it);
  };
  SECTION("the shipped ones: DeepSeek-V3's 192/128 shape for the bf16, fp8 and mxfp8 kernels") {
    const auto hw = config::parse_hardware(j, "hw.json");
    REQUIRE(hw.gpu.flash_attention_by_head_dim.contains(192));
    CHECK(hw.gpu.flash_attention_by_head_dim.at(192).value_head_dim == 128);
    // 4k causal backward: 1143 TFLOP/s · 800/832 over the Llama shape's 1536.
    CHECK(hw.gpu.flash_attention_by_head_dim.at(192).factors.backward.causal[1] ==
          Approx(1143.0 * 800 / 832 / 1536).margin(1e-4));
    REQUIRE(hw.gpu.mxfp8_attention);
    CHECK(hw.gpu.mxfp8_attention->by_head_dim.contains(192));
    CHECK(hw.gpu.fp8_attention->by_head_dim.contains(192));
    CHECK(hw.gpu.flash_attention_by_head_dim.size() == 1);
  }
  SECTION("keys are head dims") {
    shapes["d192"] = shapes["192"];
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("by_head_dim/d192") && Catch::Contains("is not a head dim"));
  }
  SECTION("a shape names at least one kernel") {
    shapes["192"] = {{"value_head_dim", 128}};
    drop_sources("/by_head_dim/192/f");
    drop_sources("/by_head_dim/192/mxfp8");
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("by_head_dim/192") && Catch::Contains("names no kernel"));
  }
  SECTION("a kernel's shape tables stand on its own tables by length") {
    j["gpu"]["attention_efficiency"]["by_sequence"].erase("fp8");
    j["gpu"]["attention_efficiency"]["sliding_window"].erase("fp8");
    drop_sources("/by_sequence/fp8/");
    drop_sources("/sliding_window/fp8/");
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("by_head_dim/192/fp8") && Catch::Contains("needs by_sequence.fp8"));
  }
  SECTION("an unknown kernel is named") {
    shapes["192"]["flash3"] = shapes["192"]["flash"];
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("flash3") && Catch::Contains("value_head_dim, flash, cudnn"));
  }
}

TEST_CASE("Sliding-window and FP8 attention tables are read with their sources, or refused", "[config]") {
  json j = read("gb300-nvl72");
  const std::string table = "/gpu/attention_efficiency/sliding_window/flash";
  auto& att = j["gpu"]["attention_efficiency"];
  SECTION("the shipped ones: windows as log2, one figure each; FP8 kernels with their own tables") {
    const auto hw = config::parse_hardware(j, "hw.json");
    REQUIRE(hw.gpu.sliding_window_attention);
    CHECK(hw.gpu.sliding_window_attention->log2_window == std::vector<double>{7});  // 128 keys
    CHECK(hw.gpu.sliding_window_attention->forward == std::vector<double>{0.0668});
    REQUIRE(hw.gpu.mxfp8_attention);
    CHECK(hw.gpu.mxfp8_attention->forward == 0.5778);  // 2889 of 5000
    REQUIRE(hw.gpu.mxfp8_attention->by_sequence);
    REQUIRE(hw.gpu.mxfp8_attention->sliding_window);
    CHECK(hw.gpu.mxfp8_attention->sliding_window->backward == std::vector<double>{0.009});  // 45 of 5000
  }
  SECTION("windows must ascend") {
    auto& t = att["sliding_window"]["flash"];
    t["windows"] = {128, 64};
    t["forward"] = {0.1, 0.1};
    t["backward"] = {0.1, 0.1};
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains(table + "/windows/1") && Catch::Contains("strictly ascending"));
  }
  SECTION("one figure per window") {
    att["sliding_window"]["flash"]["backward"] = {0.1, 0.2};
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains(table + "/backward") && Catch::Contains("one figure per window (1)"));
  }
  SECTION("a window table needs its kernel's causal table, which prices longer windows") {
    att["by_sequence"].erase("mxfp8");
    for (auto it = j["sources"].begin(); it != j["sources"].end();)
      it = it.key().find("/by_sequence/mxfp8/") != std::string::npos ? j["sources"].erase(it) : std::next(it);
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("sliding_window/mxfp8") && Catch::Contains("needs by_sequence.mxfp8"));
  }
  SECTION("FP8 figures are fractions of an FP8 peak the GPU has") {
    j["gpu"]["peak_tflops"].erase("mxfp8");
    j["sources"].erase("/gpu/peak_tflops/mxfp8");
    j["gpu"]["gemm_efficiency"].erase("mxfp8");
    j["sources"].erase("/gpu/gemm_efficiency/mxfp8");
    j["gpu"]["sustained"]["tensor"].erase("mxfp8");
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("mxfp8_forward") && Catch::Contains("no mxfp8 peak_tflops"));
  }
}

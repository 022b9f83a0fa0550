// Burst and sustained rates: what a kernel keeps of the profile's burst
// throughput through a training step, against hand calculations from the
// fractions the shipped profiles cite (stas00/ml-engineering fast-mamf).
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "ptsim/common/error.hpp"
#include "ptsim/cost/compute_cost.hpp"
#include "ptsim/cost/gemm_model.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

taskgraph::Task gemm(double m, double n, double k, Dtype dtype = Dtype::Bf16) {
  taskgraph::Task t;
  t.compute = taskgraph::ComputeKind::Matmul;
  t.kernel = taskgraph::KernelClass::Gemm;
  t.dtype = dtype;
  t.shape = {static_cast<std::uint32_t>(m), static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(k), 1};
  t.flops = 2 * m * n * k;
  t.bytes = static_cast<std::uint64_t>(2 * (m * k + k * n + m * n));
  return t;
}

taskgraph::Task copy(std::uint64_t bytes) {
  taskgraph::Task t;
  t.kernel = taskgraph::KernelClass::Copy;
  t.bytes = bytes;
  return t;
}

// Seconds without the launch overhead, which no load changes.
double work_seconds(const hardware::HardwareProfile& hw, const taskgraph::Task& t, cost::Load load) {
  return cost::compute_seconds(hw, t, load) - cost::launch_overhead_seconds(hw);
}

}  // namespace

TEST_CASE("Tensor-core work runs at the sustained fraction of its burst rate", "[cost][sustained]") {
  // H200: MSMF 708.5 against MAMF 841.9 TFLOP/s in bf16 (0.8416), 1288.7
  // against 1491.9 in fp8 (0.8638); a compute-bound GEMM takes 1/fraction
  // as long under sustained load, a copy as long (memory fraction 1).
  const auto h200 = test::shipped_hardware("h200-sxm-141gb");
  REQUIRE(h200.gpu.sustained);
  const auto big = gemm(8192, 8192, 8192);
  CHECK(work_seconds(h200, big, cost::Load::Sustained) ==
        Approx(work_seconds(h200, big, cost::Load::Burst) / (708.5 / 841.9)).epsilon(1e-4));
  const auto fp8 = gemm(8192, 8192, 8192, Dtype::Fp8);
  CHECK(work_seconds(h200, fp8, cost::Load::Sustained) ==
        Approx(work_seconds(h200, fp8, cost::Load::Burst) / (1288.7 / 1491.9)).epsilon(1e-4));
  const auto c = copy(4'000'000'000);
  CHECK(cost::compute_seconds(h200, c, cost::Load::Sustained) == cost::compute_seconds(h200, c, cost::Load::Burst));
  // The simulation's integer time is the sustained one.
  CHECK(cost::compute_time(h200, big).seconds() ==
        Approx(cost::compute_seconds(h200, big, cost::Load::Sustained)).margin(1e-9));
  // B200: 1456.3 of 1770.9 (0.8224), on the time of its calibrated table
  // (OpenXLA's measured times, launch included).
  const auto b200 = test::shipped_hardware("b200-sxm-180gb");
  REQUIRE(b200.calibration);
  CHECK(cost::compute_seconds(b200, big, cost::Load::Sustained) ==
        Approx(cost::compute_seconds(b200, big, cost::Load::Burst) / (1456.3 / 1770.9)).epsilon(1e-4));
}

TEST_CASE("The H100 profiles carry ptsim fit's bf16 figure under the H200's ratio at the H100's own clock",
          "[cost][sustained]") {
  // bf16: no sustained/burst pair is published for an H100, so the figure is
  // ptsim fit's on the calibration set's H100 rows (the profile's fit block),
  // four significant digits. It stays under the upper bound its source names:
  // the H200's MSMF / MAMF (708.5 / 841.9, its GEMM holding 1465 MHz) at the
  // average clock of an H100 SXM5 in bf16 training (1376 MHz). fp8 stays the
  // H200's 1288.7 / 1491.9 (no run of the calibration set trains in fp8).
  const auto fitted = test::shipped_hardware("h100-sxm5-80gb");
  REQUIRE(fitted.fit);
  REQUIRE(fitted.fit->parameters.size() == 1);
  const auto& bf16 = fitted.fit->parameters.front();
  CHECK(bf16.name == "sustained.tensor.bf16");
  REQUIRE(bf16.standard_error);
  const double upper_bound = 708.5 / 841.9 * 1376 / 1465;
  CHECK(bf16.value + *bf16.standard_error < upper_bound);
  for (const char* name : {"h100-sxm5-80gb", "dgx-h100-superpod", "h100-roce-llama3"}) {
    INFO(name);
    const auto h100 = test::shipped_hardware(name);
    REQUIRE(h100.gpu.sustained);
    CHECK(h100.gpu.sustained->tensor_for(Dtype::Bf16) == Approx(bf16.value).margin(5e-5));
    CHECK(h100.gpu.sustained->tensor_for(Dtype::Fp16) == h100.gpu.sustained->tensor_for(Dtype::Bf16));
    CHECK(h100.gpu.sustained->tensor_for(Dtype::Fp8) == Approx(1288.7 / 1491.9).epsilon(1e-4));
    CHECK(h100.gpu.sustained->sustained_clock_mhz == 1376);
  }
}

TEST_CASE("The 500 W H100's tensor cores keep the 700 W rate times the measured 500 W / 700 W throughput",
          "[cost][sustained]") {
  // Mayr et al., arXiv:2603.16164 Table 4: Llama 3 8B training on a 94 GB
  // HBM2e H100, 27,705.3 tokens/s at a 500 W cap against 30,271.0 at 700 W.
  // A compute-bound GEMM on the 500 W part takes the 700 W part's sustained
  // time divided by that ratio (the burst rates are the same GH100's, once
  // the 700 W profile's calibrated table is set aside).
  auto at_700 = test::shipped_hardware("h100-sxm5-80gb");
  at_700.calibration.reset();
  auto at_500 = test::shipped_hardware("h100-hbm2e-96gb-500w");
  at_500.calibration.reset();
  const double ratio = 27705.3 / 30271.0;
  for (const Dtype d : {Dtype::Bf16, Dtype::Fp8}) {
    INFO(static_cast<int>(d));
    const auto big = gemm(8192, 8192, 8192, d);
    CHECK(work_seconds(at_500, big, cost::Load::Burst) == Approx(work_seconds(at_700, big, cost::Load::Burst)));
    CHECK(work_seconds(at_500, big, cost::Load::Sustained) ==
          Approx(work_seconds(at_700, big, cost::Load::Sustained) / ratio).epsilon(2e-4));
  }
}

TEST_CASE("A memory-bound GEMM and a copy follow the memory fraction, fused attention the bf16 one", "[cost][sustained]") {
  auto hw = test::shipped_hardware("h100-sxm5-80gb");
  hw.calibration.reset();
  hw.gpu.sustained->memory = 0.5;
  hw.gpu.sustained->tensor[static_cast<std::size_t>(Dtype::Bf16)] = 0.8;
  hw.gpu.sustained->tensor[static_cast<std::size_t>(Dtype::Fp8)] = 0.6;
  // A 4 GB copy: its bytes at half the bandwidth take twice as long.
  const auto c = copy(4'000'000'000);
  CHECK(work_seconds(hw, c, cost::Load::Sustained) == Approx(2 * work_seconds(hw, c, cost::Load::Burst)));
  // A GEMM with one row is bound by its bytes (2·(k + k·n + n) ≈ 2 k n for
  // k = n = 8192: 134 MB at 3.35 TB/s · 0.9 = 44.5 µs, its math 0.05 µs).
  const auto skinny = gemm(1, 8192, 8192);
  CHECK(work_seconds(hw, skinny, cost::Load::Sustained) == Approx(2 * work_seconds(hw, skinny, cost::Load::Burst)));
  // fp16 has no figure of its own in this edit: it uses bf16's.
  hw.gpu.sustained->tensor[static_cast<std::size_t>(Dtype::Fp16)].reset();
  const auto half = gemm(8192, 8192, 8192, Dtype::Fp16);
  CHECK(work_seconds(hw, half, cost::Load::Sustained) == Approx(work_seconds(hw, half, cost::Load::Burst) / 0.8));
  // fp8 GEMMs take fp8's fraction.
  const auto fp8 = gemm(8192, 8192, 8192, Dtype::Fp8);
  CHECK(work_seconds(hw, fp8, cost::Load::Sustained) == Approx(work_seconds(hw, fp8, cost::Load::Burst) / 0.6));
  // Fused attention runs on the tensor cores in bf16: bh 32, s 16384, d 128,
  // far from memory-bound.
  taskgraph::Task att;
  att.compute = taskgraph::ComputeKind::Attention;
  att.kernel = taskgraph::KernelClass::Attention;
  att.shape = {32, 16384, 16384, 128};
  att.flops = 4.0 * 32 * 16384 * 16384 * 128;
  CHECK(work_seconds(hw, att, cost::Load::Sustained) == Approx(work_seconds(hw, att, cost::Load::Burst) / 0.8));
  // Without sustained rates both loads are the burst.
  hw.gpu.sustained.reset();
  CHECK(work_seconds(hw, half, cost::Load::Sustained) == work_seconds(hw, half, cost::Load::Burst));
}

TEST_CASE("A calibration measured under sustained load is not derated again", "[cost][sustained]") {
  auto hw = test::shipped_hardware("h100-sxm5-80gb");  // calibrated from OpenXLA's burst table
  REQUIRE(hw.calibration);
  REQUIRE(hw.calibration->sustain_s == 0);
  // A calibrated GEMM's time is the table's measured time (launch included).
  const auto big = gemm(8192, 8192, 8192);
  const double burst = cost::compute_seconds(hw, big, cost::Load::Burst);
  CHECK(cost::compute_seconds(hw, big, cost::Load::Sustained) ==
        Approx(burst / hw.gpu.sustained->tensor_for(Dtype::Bf16)).epsilon(1e-9));
  // The same tables marked as taken after 3 s of load are already sustained
  // times: both loads give the table's time.
  hw.calibration->sustain_s = 3;
  CHECK(cost::compute_seconds(hw, big, cost::Load::Sustained) == Approx(burst).epsilon(1e-12));
}

TEST_CASE("The profile's sustained block is read strictly", "[config][sustained]") {
  const auto path = test::source_path("hw_profiles/h200-sxm-141gb.json");
  nlohmann::json base;
  {
    std::ifstream in(path);
    in >> base;
  }
  const auto refused = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = base;
    edit(j);
    try {
      config::parse_hardware(j, "edited.json");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refused([](auto& j) { j["gpu"]["sustained"]["tensor"]["bf16"] = 1.2; }),
             Catch::Contains("/gpu/sustained/tensor/bf16") && Catch::Contains("1.2"));
  CHECK_THAT(refused([](auto& j) { j["gpu"]["sustained"]["tensor"].erase("bf16"); }),
             Catch::Contains("bf16") && Catch::Contains("is missing"));
  CHECK_THAT(refused([](auto& j) { j["gpu"]["sustained"]["sustained_clock_MHz"] = 2500; }),
             Catch::Contains("exceeds boost_clock_MHz"));
  CHECK_THAT(refused([](auto& j) { j["gpu"]["sustained"]["watts"] = 700; }), Catch::Contains("watts"));
  CHECK_THAT(refused([](auto& j) { j["sources"].erase("/gpu/sustained/tensor/fp8"); }),
             Catch::Contains("/gpu/sustained/tensor/fp8 has no source"));
  CHECK(refused([](auto&) {}) == "accepted");
}

// Calibration recovers what synthetic measurements were made with, and
// malformed measurement files are refused.

#include "ptsim/calibrate/check.hpp"
#include "ptsim/calibrate/fit.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/load_measurements.hpp"
#include "ptsim/cost/compute_cost.hpp"
#include "ptsim/cost/gemm_model.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

// Measurements an A100 would give if its GEMMs ran at `ratio(m)` times the
// analytic time, its kernels cost a 5 µs launch and its copies and norms ran
// at 80% and 60% of the HBM bandwidth.
hardware::MeasurementSet synthetic(const hardware::HardwareProfile& hw) {
  hardware::MeasurementSet m;
  m.file = "synthetic.json";
  m.device = "synthetic A100";
  m.date = "2026-11-29T00:00:00Z";
  const auto ratio = [](double mm) { return 1.0 + 0.1 * std::log2(mm / 256); };  // 1.0 … 1.4
  for (const double mm : {256.0, 512.0, 1024.0, 2048.0, 4096.0})
    for (const double nn : {256.0, 1024.0, 4096.0})
      for (const double kk : {256.0, 1024.0, 4096.0}) {
        const double bytes = 2 * (mm * kk + kk * nn + mm * nn);
        const double t = cost::gemm_analytic_seconds(hw.gpu, mm, nn, kk, 1, Dtype::Bf16, bytes) * ratio(mm);
        m.kernels.push_back({"gemm", "bf16", {{"m", mm}, {"n", nn}, {"k", kk}, {"batch", 1}}, t, t, t,
                             2 * mm * nn * kk, bytes, true});
      }
  for (const auto& [op, eff] : {std::pair{"copy", 0.8}, std::pair{"norm", 0.6}})
    for (double bytes = 1 << 20; bytes <= (1 << 28); bytes *= 2) {
      const double t = 5e-6 + bytes / (hw.gpu.memory_bandwidth_bytes_per_s * eff);
      m.kernels.push_back({op, "bf16", {{"bytes", bytes}}, t, t, t, 0, bytes, true});
    }
  return m;
}

}  // namespace

TEST_CASE("Calibration recovers the efficiencies synthetic measurements were made with", "[calibrate]") {
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");
  const auto set = synthetic(hw);
  const auto c = calibrate::fit(set, hw);
  REQUIRE(c.kernel_launch_overhead_s);
  CHECK(*c.kernel_launch_overhead_s == Approx(5e-6).epsilon(1e-6));
  for (const double e : c.memory.at("copy").efficiency) CHECK(e == Approx(0.8).epsilon(1e-6));
  for (const double e : c.memory.at("norm").efficiency) CHECK(e == Approx(0.6).epsilon(1e-6));
  // The fitted sub-grid: every other m (256, 1024, 4096), n and k (256, 4096).
  const auto& g = c.gemm.at("bf16");
  CHECK(g.log2_m == std::vector<double>{8, 10, 12});
  CHECK(g.log2_n == std::vector<double>{8, 12});
  CHECK(g.ratio.front() == Approx(1.0));
  CHECK(g.ratio.back() == Approx(1.4));
  // Held out: m = 512 and 2048 lie halfway (in log2) between fitted values,
  // where the ratio is linear in log2 m, so the calibrated model is exact.
  hardware::HardwareProfile calibrated = hw;
  calibrated.calibration = c;
  const auto report = calibrate::check(set, calibrated, false);
  CHECK(report.summary.count > 30);
  CHECK(report.summary.max_abs_error_pct < 0.01);
  // The datasheet model alone misses by up to 40%.
  CHECK(calibrate::check(set, hw, false).summary.max_abs_error_pct > 30);
}

TEST_CASE("Malformed measurement files are refused with the key and the fix", "[calibrate]") {
  const auto write = test::write_scratch;
  const std::string head = R"({"schema": "ptsim-measurements/1", "device": {"kind": "gpu", "name": "X"},
                               "date": "2026-11-29", "kernels": [)";
  const std::string good = R"({"op": "copy", "shape": {"bytes": 1e6}, "time_s": 1e-4, "min_s": 1e-4,
                               "max_s": 2e-4, "flops": 0, "bytes": 1e6, "verified": true})";
  CHECK(config::load_measurements(write("ok.json", head + good + "]}"), test::unchecked_inputs()).kernels.size() == 1);
  // fuzz_measurements: a kernel without a shape once escaped as nlohmann's out_of_range.
  CHECK_THROWS_WITH(config::load_measurements(write("noshape.json", head + R"({"op": "copy", "time_s": 1e-4}]})"),
                                              test::unchecked_inputs()),
                    Catch::Contains("/kernels/0/shape is missing"));
  CHECK_THROWS_WITH(config::load_measurements(write("schema.json", R"({"schema": "x"})"), test::unchecked_inputs()),
                    Catch::Contains("expected \"ptsim-measurements/1\""));
  CHECK_THROWS_WITH(config::load_measurements(write("empty.json", head + "]}"), test::unchecked_inputs()),
                    Catch::Contains("/kernels = [] is empty; a measurement file holds at least one kernel"));
  CHECK_THROWS_WITH(config::load_measurements(write("op.json",
                                                    head + R"({"op": "conv", "shape": {}, "time_s": 1, "min_s": 1,
                                                            "max_s": 1, "flops": 0, "bytes": 0, "verified": true}]})"),
                                              test::unchecked_inputs()),
                    Catch::Contains("/kernels/0/op = \"conv\" is not an operation ptsim knows"));
  CHECK_THROWS_WITH(config::load_measurements(write("range.json",
                                                    head + R"({"op": "copy", "shape": {"bytes": 1}, "time_s": 5,
                                                               "min_s": 1, "max_s": 2, "flops": 0, "bytes": 1,
                                                               "verified": true}]})"),
                                              test::unchecked_inputs()),
                    Catch::Contains("/kernels/0/time_s = 5 must lie between min_s = 1 and max_s = 2"));
  CHECK_THROWS_WITH(config::load_measurements(write("gemm.json",
                                                    head + R"({"op": "gemm", "shape": {"m": 1, "n": 1}, "time_s": 1,
                                                              "min_s": 1, "max_s": 1, "flops": 0, "bytes": 0,
                                                              "verified": true}]})"),
                                              test::unchecked_inputs()),
                    Catch::Contains("/kernels/0/shape/k is missing; a gemm measurement names its k"));
  CHECK_THROWS_WITH(config::load_measurements(write("broken.json", head), test::unchecked_inputs()),
                    Catch::Contains("not valid JSON"));
}

TEST_CASE("A GEMM grid with a hole cannot be fitted", "[calibrate]") {
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");
  auto set = synthetic(hw);
  set.kernels.erase(set.kernels.begin());  // m = n = k = 256, a fitted grid point
  CHECK_THROWS_WITH(calibrate::fit(set, hw), Catch::Contains("lacks a verified measurement of m = 256, n = 256, k = 256"));
}

TEST_CASE("GEMMs at scattered shapes fit one ratio, checked on the other half", "[calibrate]") {
  // Shapes of real layers, no grid: (m, n, k) pairs that share no axis values
  // across the whole set, each measured at 1.25 times the analytic time but
  // for every fourth at 1.35: the median of the fitted half is 1.25.
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");
  hardware::MeasurementSet set;
  set.file = "scattered.json";
  set.device = "synthetic A100";
  set.date = "as published";
  for (int i = 0; i < 40; ++i) {
    const double mm = 1024 + 96 * i, nn = 3072 + 160 * i, kk = 8192 - 64 * i;
    const double bytes = 2 * (mm * kk + kk * nn + mm * nn);
    const double r = i % 4 == 3 ? 1.35 : 1.25;
    const double t = cost::gemm_analytic_seconds(hw.gpu, mm, nn, kk, 1, Dtype::Bf16, bytes) * r;
    set.kernels.push_back({"gemm", "bf16", {{"m", mm}, {"n", nn}, {"k", kk}, {"batch", 1}}, t, t, t,
                           2 * mm * nn * kk, bytes, true});
  }
  // As a grid it has no fitted point at all (m and n rise with i, k falls).
  CHECK_THROWS_WITH(calibrate::fit(set, hw), Catch::Contains("--gemm-scalar"));
  const auto c = calibrate::fit(set, hw, {.gemm_scalar = true});
  CHECK(c.gemm_fit == hardware::GemmFit::Scalar);
  const auto& g = c.gemm.at("bf16");
  REQUIRE(g.ratio.size() == 1);
  CHECK(g.ratio.front() == Approx(1.25));
  // Fitted on every other GEMM by FLOPs, so check() holds out the other 20:
  // those at 1.25 are exact, those at 1.35 are 1.25/1.35 − 1 = −7.4% off.
  hardware::HardwareProfile calibrated = hw;
  calibrated.calibration = c;
  const auto report = calibrate::check(set, calibrated, false);
  CHECK(report.summary.count == 20);
  for (const auto& k : report.kernels) {
    const double r = k.index % 4 == 3 ? 1.35 : 1.25;
    CHECK(k.error_pct == Approx((1.25 / r - 1) * 100).margin(1e-9));
  }
}

TEST_CASE("Attention efficiencies are fitted only when asked", "[calibrate]") {
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");
  auto set = synthetic(hw);
  // Fused attention at 50% forward and 40% backward of the bf16 peak on the
  // FLOPs it executes (causal: half; backward: 2.5× the forward count), plus
  // the 5 µs launch the memory kernels above imply.
  const double peak = hw.gpu.peak_flops(Dtype::Bf16);
  for (const double seq : {1024.0, 2048.0, 4096.0, 8192.0})
    for (const bool causal : {false, true})
      for (const bool backward : {false, true}) {
        const double bh = 32768 / seq, forward_flops = 4 * bh * seq * seq * 128;
        const double executed = forward_flops * (causal ? 0.5 : 1.0) * (backward ? 2.5 : 1.0);
        const double t = 5e-6 + executed / (peak * (backward ? 0.4 : 0.5));
        set.kernels.push_back({"attention", "bf16",
                               {{"batch_heads", bh}, {"seq_q", seq}, {"seq_kv", seq}, {"head_dim", 128},
                                {"causal", causal ? 1.0 : 0.0}, {"backward", backward ? 1.0 : 0.0}},
                               t, t, t, backward ? 2 * forward_flops : forward_flops, 0, true});
      }
  const auto kept = calibrate::fit(set, hw);
  CHECK_FALSE(kept.attention_forward_efficiency);
  CHECK_FALSE(kept.attention_backward_efficiency);
  const auto fitted = calibrate::fit(set, hw, {.attention = true});
  REQUIRE(fitted.attention_forward_efficiency);
  REQUIRE(fitted.attention_backward_efficiency);
  CHECK(*fitted.attention_forward_efficiency == Approx(0.5).epsilon(1e-6));
  CHECK(*fitted.attention_backward_efficiency == Approx(0.4).epsilon(1e-6));
  // The held-out attention kernels are then predicted exactly.
  hardware::HardwareProfile calibrated = hw;
  calibrated.calibration = fitted;
  const auto report = calibrate::check(set, calibrated, false);
  int attention = 0;
  for (const auto& k : report.kernels)
    if (k.op == "attention") {
      ++attention;
      CHECK(std::abs(k.error_pct) < 1e-6);
    }
  CHECK(attention == 8);
}

TEST_CASE("Block-scaled GEMM measurements are checked at their format's rate", "[calibrate]") {
  // The same large GEMM measured in per-tensor FP8 and in MXFP8 on a GB200
  // with no calibration table: compute-bound, so the predictions differ by
  // the profile's two rates, 5000 × 0.723 against 5000 × 0.6878 TFLOP/s.
  auto hw = test::shipped_hardware("gb200-nvl72");
  hw.calibration.reset();
  const std::string kernel = R"({"op": "gemm", "dtype": "DTYPE", "shape": {"m": 16384, "n": 16384, "k": 16384,
                                 "batch": 1}, "time_s": 1e-3, "min_s": 1e-3, "max_s": 1e-3, "flops": 8.8e12,
                                 "bytes": 1.6e9, "verified": true})";
  std::string kernels = kernel;
  kernels.replace(kernels.find("DTYPE"), 5, "fp8");
  std::string mx = kernel;
  mx.replace(mx.find("DTYPE"), 5, "mxfp8");
  const std::string file = R"({"schema": "ptsim-measurements/1", "device": {"kind": "gpu", "name": "X"},
                               "date": "2026-12-06", "kernels": [)" +
                           kernels + ", " + mx + "]}";
  const auto set = config::load_measurements(test::write_scratch("mx.json", file), test::unchecked_inputs());
  REQUIRE(set.kernels.size() == 2);
  CHECK(set.kernels[1].dtype == "mxfp8");
  const auto report = calibrate::check(set, hw, true);
  REQUIRE(report.kernels.size() == 2);
  double fp8 = 0;
  double mxfp8 = 0;
  for (const auto& k : report.kernels) (k.dtype == "fp8" ? fp8 : mxfp8) = k.predicted_s;
  CHECK(mxfp8 / fp8 == Approx(0.723 / 0.6878).epsilon(0.002));
  // A format ptsim has no rate for is refused by name.
  std::string fp4 = kernel;
  fp4.replace(fp4.find("DTYPE"), 5, "fp4");
  CHECK_THROWS_WITH(config::load_measurements(test::write_scratch("fp4.json",
                                                                  R"({"schema": "ptsim-measurements/1", "device":
          {"kind": "gpu", "name": "X"}, "date": "2026-12-06", "kernels": [)" +
                                                                      fp4 + "]}"),
                                              test::unchecked_inputs()),
                    Catch::Contains("/kernels/0/dtype = \"fp4\" is not one of the accepted values") &&
                        Catch::Contains("mxfp8, nvfp4"));
}

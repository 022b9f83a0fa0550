// Roofline kernel times against hand calculations.
#include "ptsim/cost/compute_cost.hpp"

#include "test_support.hpp"

using namespace ptsim;

TEST_CASE("A GEMM is bound by the slower of its math and its memory traffic", "[cost]") {
  const auto a100 = test::shipped_hardware("a100-sxm4-80gb");
  const double launch = 2.6e-6;  // the profile's kernel launch overhead
  taskgraph::Task gemm;
  gemm.compute = taskgraph::ComputeKind::Matmul;
  // 8192³ bf16 GEMM: 2·8192³ = 1.0995e12 FLOP at 312e12 · 0.869 = 271.1 TFLOP/s → 4.055 ms.
  gemm.flops = 2.0 * 8192 * 8192 * 8192;
  gemm.bytes = 3ull * 8192 * 8192 * 2;  // 402.7 MB: 0.227 ms at 2039 GB/s · 0.87, well below
  CHECK(cost::compute_seconds(a100.gpu, gemm) == Approx(gemm.flops / (312e12 * 0.869) + launch).epsilon(1e-12));
  // The uncalibrated model sits at the published A100 ceiling: MAMF 271.2 TFLOP/s
  // (shared/validation/hardware_reference.md §6.2).
  CHECK(gemm.flops / (cost::compute_seconds(a100.gpu, gemm) - launch) == Approx(271.2e12).epsilon(0.001));

  taskgraph::Task copy;  // memory-bound: 1 GB read + written
  copy.bytes = 2'000'000'000;
  CHECK(cost::compute_seconds(a100.gpu, copy) == Approx(2e9 / (2039e9 * 0.87) + launch).epsilon(1e-12));
  CHECK(cost::compute_time(a100.gpu, copy).ns() == 1'130'040);  // 1.127440 ms + 2.6 µs, in ns
}

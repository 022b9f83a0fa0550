// Ring α–β collective times against their closed forms.
#include "ptsim/cost/collective_cost.hpp"

#include "test_support.hpp"

using namespace ptsim;
using taskgraph::CollectiveKind;

TEST_CASE("Ring collectives follow the α–β closed forms", "[cost]") {
  hardware::NetworkTier tier;
  tier.bandwidth_bytes_per_s = 100e9;
  tier.efficiency = 0.8;  // B = 80 GB/s
  tier.latency_s = 5e-6;  // α
  const double call = 8e-6;
  const double S = 1e9;
  const double B = 80e9;
  const double a = 5e-6;
  for (const double n : {2.0, 8.0, 64.0}) {
    const auto k = static_cast<std::int64_t>(n);
    // all-reduce: 2(n−1)·α + 2(n−1)/n · S/B
    CHECK(cost::collective_seconds(CollectiveKind::AllReduce, 1'000'000'000, k, tier, call) ==
          Approx(2 * (n - 1) * a + 2 * (n - 1) / n * S / B + call));
    // all-gather and reduce-scatter: (n−1)·α + (n−1)/n · S/B
    CHECK(cost::collective_seconds(CollectiveKind::AllGather, 1'000'000'000, k, tier, call) ==
          Approx((n - 1) * a + (n - 1) / n * S / B + call));
    CHECK(cost::collective_seconds(CollectiveKind::ReduceScatter, 1'000'000'000, k, tier, call) ==
          Approx((n - 1) * a + (n - 1) / n * S / B + call));
  }
  CHECK(cost::collective_seconds(CollectiveKind::PointToPoint, 1'000'000'000, 2, tier, call) ==
        Approx(a + S / B + call));
  CHECK(cost::collective_seconds(CollectiveKind::AllReduce, 1'000'000'000, 1, tier, call) == 0);
}

TEST_CASE("The A100 profile reproduces NCCL's measured bus bandwidth", "[cost]") {
  // nccl-tests busbw of all-reduce = algbw · 2(n−1)/n; the NCCL maintainer
  // reports ≈ 230 GB/s on 8 A100s with NVSwitch at large sizes
  // (shared/validation/hardware_reference.md §6.3).
  const auto a100 = test::shipped_hardware("a100-sxm4-80gb");
  const double bytes = 8e9;
  const double t = cost::collective_seconds(CollectiveKind::AllReduce, 8'000'000'000, 8,
                                            a100.tiers[0], a100.collective_base_latency_s);
  const double busbw = bytes / t * 2 * 7 / 8;
  CHECK(busbw == Approx(230e9).epsilon(0.01));
}

// The power-limit what-if against the measurement it is built on (Mayr et
// al., arXiv:2603.16164, Table 4: Llama 3 8B training tokens/s on a 700 W
// H100 at caps of 200 … 700 W).
#include <cmath>

#include "ptsim/common/error.hpp"
#include "ptsim/hardware/power_limit.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

constexpr double kAt700 = 30271.0;

double bf16(const hardware::HardwareProfile& hw) { return hw.gpu.sustained->tensor_for(Dtype::Bf16); }

}  // namespace

TEST_CASE("Training throughput under a power limit follows the measured caps, linear between", "[hardware][power]") {
  CHECK(hardware::training_throughput_at(1.0) == Approx(1.0));
  CHECK(hardware::training_throughput_at(500.0 / 700) == Approx(27705.3 / kAt700));
  CHECK(hardware::training_throughput_at(200.0 / 700) == Approx(9699.3 / kAt700));
  // 550 W: halfway between the 500 W and 600 W rows.
  CHECK(hardware::training_throughput_at(550.0 / 700) == Approx((27705.3 + 29250.0) / 2 / kAt700));
  CHECK_THROWS_AS(hardware::training_throughput_at(0.2), ConfigError);
  CHECK_THROWS_AS(hardware::training_throughput_at(1.01), ConfigError);
}

TEST_CASE("A lowered power limit scales the tensor-core fractions, not memory, and names the limit",
          "[hardware][power]") {
  const auto h100 = test::shipped_hardware("h100-sxm5-80gb");  // 700 W, sustained bf16 0.6892, fp8 0.8638
  const auto capped = hardware::under_power_limit(h100, 500);
  CHECK(bf16(capped) == Approx(0.6892 * 27705.3 / kAt700));
  CHECK(capped.gpu.sustained->tensor_for(Dtype::Fp8) == Approx(0.8638 * 27705.3 / kAt700));
  CHECK(capped.gpu.sustained->memory == h100.gpu.sustained->memory);
  CHECK(*capped.gpu.sustained->board_power_w == 500);
  CHECK(capped.name == h100.name + " at 500 W");
  CHECK(capped.gpu.name == h100.gpu.name + " at 500 W");
  // At its own limit nothing changes.
  CHECK(bf16(hardware::under_power_limit(h100, 700)) == Approx(0.6892));
}

TEST_CASE("Meta's 500 W H100 raised to its 700 W maximum keeps the 700 W H100's rates", "[hardware][power]") {
  // The 500 W profile's fractions are the 700 W ones times the measured
  // 500 W / 700 W ratio; raising its limit undoes exactly that.
  const auto meta = test::shipped_hardware("h100-hbm2e-96gb-500w");
  const auto h100 = test::shipped_hardware("h100-sxm5-80gb");
  REQUIRE(meta.gpu.sustained->max_power_w);
  const auto raised = hardware::under_power_limit(meta, 700);
  CHECK(bf16(raised) == Approx(bf16(h100)).epsilon(2e-4));
  CHECK(raised.gpu.sustained->tensor_for(Dtype::Fp8) ==
        Approx(h100.gpu.sustained->tensor_for(Dtype::Fp8)).epsilon(2e-4));
  // 400 W on it: the 400 W row over the 500 W row.
  CHECK(bf16(hardware::under_power_limit(meta, 400)) == Approx(bf16(meta) * 24853.4 / 27705.3));
}

TEST_CASE("A power limit outside the measured range, or on a profile without one, is refused by name",
          "[hardware][power]") {
  const auto h100 = test::shipped_hardware("h100-sxm5-80gb");
  CHECK_THROWS_WITH(hardware::under_power_limit(h100, 800),
                    Catch::Contains("800 W is outside 200 … 700 W") && Catch::Contains(h100.name));
  CHECK_THROWS_WITH(hardware::under_power_limit(h100, 150), Catch::Contains("outside 200 … 700 W"));
  CHECK_THROWS_AS(hardware::under_power_limit(h100, std::nan("")), ConfigError);
  auto bare = h100;
  bare.gpu.sustained->board_power_w.reset();
  CHECK_THROWS_WITH(hardware::under_power_limit(bare, 500), Catch::Contains("no gpu.sustained.board_power_W"));
  bare.gpu.sustained.reset();
  CHECK_THROWS_AS(hardware::under_power_limit(bare, 500), ConfigError);
}

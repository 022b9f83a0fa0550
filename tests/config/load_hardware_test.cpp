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
  for (const char* stem : {"a100-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb", "b200-sxm-180gb"}) {
    const auto hw = test::shipped_hardware(stem);
    CHECK(hw.name == stem);
    CHECK(hw.gpus_per_node == 8);
    CHECK(hw.tiers.size() == 2);
    CHECK(hw.tiers[0].domain_gpus == 8);
    CHECK(hw.sources.size() >= 15);
  }
  const auto a100 = test::shipped_hardware("a100-sxm4-80gb");
  CHECK(a100.gpu.peak_flops(Dtype::Bf16) == 312e12);
  CHECK(a100.gpu.memory_bytes == 80.0 * 1024 * 1024 * 1024);
  CHECK(a100.tiers[1].bandwidth_bytes_per_s == 25e9);  // HDR 200 Gb/s
  CHECK(a100.tiers[0].latency_s == Approx(3.4e-6));
  CHECK_THROWS_WITH(a100.gpu.peak_flops(Dtype::Fp8), Catch::Contains("has no fp8 peak rate"));
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
                      Catch::Contains("\"/gpu/clock_MHz\", which is not a numeric figure"));
  }
  SECTION("unknown key") {
    j["gpu"]["tflops"] = 5;
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"), Catch::Contains("unknown key 'tflops' in /gpu"));
  }
  SECTION("negative bandwidth") {
    j["network"]["tiers"][1]["bandwidth_GBps"] = -25;
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"),
                      Catch::Contains("/network/tiers/1/bandwidth_GBps = -25 is out of range"));
  }
  SECTION("zero memory") {
    j["gpu"]["memory_GiB"] = 0;
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"), Catch::Contains("/gpu/memory_GiB = 0 is out of range"));
  }
  SECTION("efficiency above one") {
    j["gpu"]["gemm_efficiency"] = 1.2;
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"), Catch::Contains("/gpu/gemm_efficiency = 1.2 is out of range"));
  }
  SECTION("wrong schema") {
    j["schema"] = "ptsim-hw/9";
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"), Catch::Contains("expected \"ptsim-hw/1\""));
  }
  SECTION("last tier with a domain") {
    j["network"]["tiers"][1]["domain_gpus"] = 64;
    j["sources"]["/network/tiers/1/domain_gpus"] = "x";
    CHECK_THROWS_WITH(config::parse_hardware(j, "hw.json"), Catch::Contains("must be absent on the last tier"));
  }
}

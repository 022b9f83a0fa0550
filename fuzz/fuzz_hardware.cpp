// libFuzzer target: the hardware profile reader (ptsim-hw JSON), and the
// cluster a loaded profile builds for a small job.
#include "fuzz_support.hpp"
#include "ptsim/config/load_hardware.hpp"
#include "ptsim/hardware/cluster.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = ptsim::fuzz::write_input(data, size);
  ptsim::config::InputFiles read;
  ptsim::fuzz::expect_only_config_errors([&] {
    const ptsim::hardware::HardwareProfile hw = ptsim::config::load_hardware(path, read);
    const ptsim::hardware::Cluster cluster(hw, 2 * hw.gpus_per_node);
    (void)cluster.num_links();
  });
  return 0;
}

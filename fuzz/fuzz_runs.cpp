// libFuzzer target: the published-runs reader (validation/published_runs.json format).
#include "fuzz_support.hpp"
#include "ptsim/config/load_runs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = ptsim::fuzz::write_input(data, size);
  ptsim::config::InputFiles read;
  ptsim::fuzz::expect_only_config_errors([&] { (void)ptsim::config::load_runs(path, read); });
  return 0;
}

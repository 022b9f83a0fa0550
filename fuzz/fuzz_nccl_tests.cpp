// libFuzzer target: the nccl-tests log reader (ptsim fit --nccl-tests), with
// and without a collective given on the command line.
#include "fuzz_support.hpp"
#include "ptsim/config/load_nccl_tests.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = ptsim::fuzz::write_input(data, size);
  ptsim::config::InputFiles read;
  ptsim::fuzz::expect_only_config_errors([&] { (void)ptsim::config::load_nccl_tests(path, read); });
  ptsim::fuzz::expect_only_config_errors(
      [&] { (void)ptsim::config::load_nccl_tests(path, read, {.op = "all_gather"}); });
  return 0;
}

// libFuzzer target: the model reader (ptsim JSON with Megatron-LM names, or a
// Hugging Face config.json detected from its keys). Built twice, as
// fuzz_model and fuzz_hf_config, each with its own seed corpus.
#include "fuzz_support.hpp"
#include "ptsim/config/load_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = ptsim::fuzz::write_input(data, size);
  ptsim::config::InputFiles read;
  ptsim::fuzz::expect_only_config_errors([&] { (void)ptsim::config::load_model(path, read); });
  return 0;
}

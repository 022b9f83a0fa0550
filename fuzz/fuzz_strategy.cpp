// libFuzzer target: the strategy file reader, and resolving what it reads
// against the tiny model (every cross-check of strategy against model).
#include "fuzz_support.hpp"
#include "ptsim/config/load_model.hpp"
#include "ptsim/config/strategy_input.hpp"
#include "ptsim/config/resolve_run.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ptsim::model::ModelSpec tiny = [] {
    ptsim::config::InputFiles model_file;
    return ptsim::config::load_model(std::string(PTSIM_SOURCE_DIR) + "/configs/models/tiny.json", model_file);
  }();
  const std::string& path = ptsim::fuzz::write_input(data, size);
  ptsim::config::InputFiles read;
  ptsim::fuzz::expect_only_config_errors([&] {
    const ptsim::config::StrategyInput s = ptsim::config::load_strategy(path, read);
    (void)ptsim::config::resolve_run(tiny, s);
  });
  return 0;
}

// libFuzzer target: the command line of the simulating commands — flags
// parsed as every command parses them (parse_args), then the strategy flags
// checked against a model and a hardware profile (ptsim's load_run). The
// input is the argument list, one argument per line. --model and --hw are
// pinned to shipped files and --strategy to the scratch file, so that the
// fuzzer cannot make the target read arbitrary files (or /dev/zero).
#include <boost/program_options.hpp>
#include <sstream>
#include <vector>

#include "parse_args.hpp"
#include "run_inputs.hpp"
#include "fuzz_support.hpp"

namespace po = boost::program_options;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args;
  std::istringstream text(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(text, line);) args.push_back(line);
  ptsim::fuzz::expect_only_config_errors([&] {
    ptsim::cli::RunInputs inputs;
    po::options_description options;
    options.add(ptsim::cli::input_options(inputs)).add(ptsim::cli::strategy_options());
    po::variables_map vm;
    ptsim::cli::parse_args(args, options, nullptr, vm, "simulate");  // as every command does
    inputs.model = std::string(PTSIM_SOURCE_DIR) + "/configs/models/tiny.json";
    inputs.hw = std::string(PTSIM_SOURCE_DIR) + "/hw_profiles/a100-sxm4-80gb.json";
    if (!inputs.strategy.empty()) inputs.strategy = ptsim::fuzz::input_path(".strategy.json");
    ptsim::config::InputFiles read;
    (void)ptsim::cli::load_run(inputs, read, vm, "fuzz");
  });
  return 0;
}

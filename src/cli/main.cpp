// The ptsim command line: dispatches to subcommands and is the only place
// that prints errors and picks exit codes (0 ok, 2 bad input, 3 the
// simulation cannot finish, 70 internal error).
#include <fmt/format.h>

#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "heap_pages.hpp"
#include "ptsim/common/error.hpp"

namespace {

constexpr const char* kHelp = R"(ptsim — discrete-event simulator of parallel training strategies

Usage: ptsim <command> [options]      (ptsim <command> --help for the command's options)

Commands:
  simulate     simulate one training step of a model on a cluster under a strategy
  collective   predict one collective (time, algbw, busbw as nccl-tests reports them)
  kernels      list the distinct kernels a step runs, with counts and predicted times
  calibrate    fit a hardware profile's compute model to measured kernel times
  check-kernels  compare a profile's kernel predictions with measured times
  validate     simulate published training runs and compare with their measured step times
  fit          fit a profile's sustained rates and network to measured steps or nccl-tests logs
  plan         search the strategies for a model on N GPUs and rank them
  merge        merge the outputs of a sharded plan search
  sweep        the best strategy over a grid of hardware what-ifs and GPU counts
  report       capacity planning: time, GPU-hours, cost and energy to train T tokens, with plots

Example:
  ptsim simulate --model configs/models/gpt3-175b.json --hw hw_profiles/a100-sxm4-80gb.json \
      --gpus 1024 --tp 8 --pp 8 --global-batch-size 1536

Exit codes: 0 success · 2 invalid input · 3 simulation cannot finish, or nothing
fits in memory (simulate: the strategy, --allow-oom for 0; plan: no candidate) ·
4 a check's bound exceeded · 70 internal error
)";

}  // namespace

int main(int argc, char** argv) {
  ptsim::cli::prefer_huge_heap_pages();
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      fmt::print("{}", kHelp);
      return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version") {
      fmt::print("ptsim 0.1.0\n");
      return 0;
    }
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args[0] == "simulate") return ptsim::cli::run_simulate(rest, std::cout);
    if (args[0] == "collective") return ptsim::cli::run_collective(rest, std::cout);
    if (args[0] == "kernels") return ptsim::cli::run_kernels(rest, std::cout);
    if (args[0] == "calibrate") return ptsim::cli::run_calibrate(rest, std::cout);
    if (args[0] == "check-kernels") return ptsim::cli::run_check_kernels(rest, std::cout);
    if (args[0] == "validate") return ptsim::cli::run_validate(rest, std::cout);
    if (args[0] == "fit") return ptsim::cli::run_fit(rest, std::cout);
    if (args[0] == "plan") return ptsim::cli::run_plan(rest, std::cout);
    if (args[0] == "merge") return ptsim::cli::run_merge(rest, std::cout);
    if (args[0] == "sweep") return ptsim::cli::run_sweep(rest, std::cout);
    if (args[0] == "report") return ptsim::cli::run_report(rest, std::cout);
    fmt::print(stderr, "ptsim: unknown command '{}'; run ptsim --help for the commands\n", args[0]);
    return 2;
  } catch (const ptsim::ConfigError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  } catch (const ptsim::SimulationError& e) {
    fmt::print(stderr, "simulation error: {}\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    fmt::print(stderr, "internal error: {}\n", e.what());
    return 70;
  }
}

// The one include of Catch2 (moving to v3 changes this line) and helpers
// shared by the tests: paths of shipped files and of test data, never
// relative to the working directory.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "ptsim/config/load_hardware.hpp"
#include "ptsim/config/load_model.hpp"
#include "ptsim/config/megatron_args.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/simulate/kernel_inventory.hpp"
#include "ptsim/simulate/simulate_step.hpp"
#include "ptsim/workload/op_spec.hpp"
#include "ptsim/workload/step_workload.hpp"

namespace ptsim::test {

// Joined as filesystem paths, not as `std::string(DIR) + "/" + relative`:
// GCC 12 at -O3 reports a false -Warray-bounds on that concatenation when the
// directory is 15 characters or longer (past the short-string buffer), which
// warnings-as-errors turned into a CI failure under /check/work/main.
inline std::string source_path(const std::string& relative) {
  return (std::filesystem::path(PTSIM_SOURCE_DIR) / relative).string();
}

inline std::string data_path(const std::string& relative) {
  return (std::filesystem::path(PTSIM_TEST_DATA_DIR) / relative).string();
}

/// A path in a per-process scratch directory under the system's temp dir.
inline std::string scratch_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ptsim-tests-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

/// Writes `text` to the scratch file `name` (scratch_path) and returns its path.
inline std::string write_scratch(const std::string& name, const std::string& text) {
  const std::string path = scratch_path(name);
  std::ofstream(path) << text;
  return path;
}

/// What loaders record for a test that does not check it (one per thread;
/// a command owns its own config::InputFiles).
inline config::InputFiles& unchecked_inputs() {
  static thread_local config::InputFiles files;
  return files;
}

inline model::ModelSpec shipped_model(const std::string& stem) {
  return config::load_model(source_path("configs/models/" + stem + ".json"), unchecked_inputs());
}

inline hardware::HardwareProfile shipped_hardware(const std::string& stem) {
  return config::load_hardware(source_path("hw_profiles/" + stem + ".json"), unchecked_inputs());
}

/// A profile whose network is free (infinite bandwidth, no latency) and whose
/// kernels cost no launch overhead, feel no communication and lose nothing to
/// wave quantization (one SM): what closed forms that ignore all four assume.
inline hardware::HardwareProfile free_network(hardware::HardwareProfile hw) {
  hw.gpu.sm_count = 1;
  hw.collective_base_latency_s = 0;
  hw.gpu.kernel_launch_overhead_s = 0;
  hw.gpu.comm_compute_slowdown = 0;
  hw.nvlink.bandwidth_bytes_per_s = 1e30;
  hw.nvlink.latency_s = 0;
  hw.nvlink.nvls_efficiency.reset();
  hw.nic.bandwidth_bytes_per_s = 1e30;
  hw.nic.latency_s = 0;
  hw.fabric.switch_latency_s = 0;
  return hw;
}

/// Resolves a strategy given as a filled StrategyInput and simulates it.
inline simulate::Outcome simulate(const model::ModelSpec& m, const hardware::HardwareProfile& hw,
                                  const config::StrategyInput& s,
                                  simulate::Mode mode = simulate::Mode::Explicit) {
  const config::ResolvedRun run = config::resolve_run(m, s);
  simulate::Request request{run.model, hw, run.parallel, mode, {}, {}};
  return simulate::simulate_step(request);
}

/// A Megatron-LM launch line of a small model (2 layers, h 256, 4 heads,
/// 512 tokens, a 32,000-word vocabulary, micro-batch 1, global batch 16)
/// with `flags` after it, parsed.
inline config::MegatronLaunch small_launch(const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"--num-layers",
                                   "2",
                                   "--hidden-size",
                                   "256",
                                   "--num-attention-heads",
                                   "4",
                                   "--max-position-embeddings",
                                   "512",
                                   "--seq-length",
                                   "512",
                                   "--vocab-size",
                                   "32000",
                                   "--micro-batch-size",
                                   "1",
                                   "--global-batch-size",
                                   "16"};
  args.insert(args.end(), flags.begin(), flags.end());
  return config::parse_megatron_args(args);
}

/// GEMM calls per step in `dtype` of a run (kernel_inventory: every stage's
/// one rank, all its micro-batches).
inline std::uint64_t gemm_calls(const model::ModelSpec& m, const hardware::HardwareProfile& hw,
                                const config::StrategyInput& s, Dtype dtype) {
  std::uint64_t calls = 0;
  for (const auto& k : simulate::kernel_inventory(m, hw, config::resolve_run(m, s).parallel))
    if (k.kernel == taskgraph::KernelClass::Gemm && k.dtype == dtype) calls += k.count;
  return calls;
}

/// The first op named `name` in `ops`; a failed test when there is none.
inline const workload::OpSpec& op_named(const std::vector<workload::OpSpec>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name) return op;
  FAIL("no op " << name);
  return ops.front();
}

/// A resolved run's model with its vocabulary padded as the workload pads it
/// (what stage_parameters and stage_static_memory expect).
inline model::ModelSpec padded_model(const config::ResolvedRun& r) {
  auto m = r.model;
  m.vocab_size = workload::padded_vocab_size(m.vocab_size, r.parallel.tp);
  return m;
}

/// Sum of `field` over every instance of every task of `step` whose op name
/// starts with `prefix`, on stage `stage`.
inline double task_total(const workload::StepWorkload& step, std::size_t stage, const std::string& prefix,
                         const std::function<double(const taskgraph::Task&)>& field) {
  const auto& program = step.workload.programs[stage];
  double total = 0;
  for (const auto& instance : program.instances()) {
    const auto& block = program.block(instance.block);
    for (taskgraph::TaskId t = 0; t < block.size(); ++t) {
      const auto& task = block.task(t);
      if (step.workload.op_names[task.name].rfind(prefix, 0) == 0) total += field(task);
    }
  }
  return total;
}

}  // namespace ptsim::test

// A simulation's memory estimate and guard (see simulation_memory.hpp).
#include "ptsim/simulate/simulation_memory.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "ptsim/common/error.hpp"
#include "ptsim/workload/step_workload.hpp"

namespace ptsim::simulate {

namespace {
// Measured with scripts/bench.sh (peak RSS over simulated ranks, compiled
// programs taken out): Llama 3 405B on 16,384 ranks 254 MiB → 15.9 KiB a rank;
// GPT-3 175B on 1024 ranks 26 MiB less 11 MiB of programs → 15 KiB a rank.
constexpr double kBytesPerRank = 16 * 1024.0;
// Tasks per layer and micro-batch on a rank: 28.5 for GPT-3 175B (32.8 k tasks,
// 96 micro-batches × 12 layers) and 28.3 for Llama 3 405B (3.6 k tasks, 16 × 8),
// rounded up for recomputation and the embedding and output layers.
constexpr double kTasksPerLayerAndMicrobatch = 32;
// A compiled program's task (entry, edges, issue order) with the workload's
// task and names: 84 bytes a task measured (peak RSS of symmetric runs of a
// 100-layer, h = 262,144 model whose 1.04 M tasks are mostly gradient buckets,
// against the same at 50 layers), rounded up. Measured before compiled
// programs shrank to templates (docs/performance.md, change 25): the engine's
// share is about 28 bytes a task smaller now, so the guard errs on the safe side.
constexpr double kProgramBytesPerTask = 100;
constexpr double kSafety = 0.8;  // leave the rest to the workload, the OS and other programs
constexpr double kAlwaysFits = 64.0 * (1u << 20);  // see check_memory_fits without `available`
}  // namespace

double tasks_per_rank(const model::ModelSpec& model, const strategy::ParallelConfig& parallel) {
  const double microbatches = static_cast<double>(parallel.global_batch_size) /
                              static_cast<double>(parallel.dp * parallel.micro_batch_size);
  const double layers = std::ceil(static_cast<double>(model.num_layers) / static_cast<double>(parallel.pp));
  const auto bucket = static_cast<double>(workload::bucket_parameters(parallel));
  const double parameters = static_cast<double>(model::total_parameters(model)) /
                            static_cast<double>(parallel.tp * parallel.pp);
  return microbatches * layers * kTasksPerLayerAndMicrobatch + std::ceil(parameters / bucket);
}

double simulation_memory_bytes(const model::ModelSpec& model, const strategy::ParallelConfig& parallel,
                               bool every_rank) {
  const double tasks = tasks_per_rank(model, parallel);
  const double stages = static_cast<double>(parallel.pp);
  const double ranks = every_rank ? static_cast<double>(parallel.world_size)
                                  : stages * static_cast<double>(parallel.cp);
  return stages * tasks * kProgramBytesPerTask + ranks * (kBytesPerRank + tasks / 8);
}

std::optional<double> available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    std::istringstream fields(line);
    std::string key;
    double kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return static_cast<double>(pages) * static_cast<double>(page);
  return std::nullopt;
}

void check_memory_fits(const model::ModelSpec& model, const strategy::ParallelConfig& parallel,
                       bool every_rank, std::optional<double> available) {
  if (!available) return;
  const double need = simulation_memory_bytes(model, parallel, every_rank);
  if (need <= kSafety * *available) return;
  if (every_rank)
    throw ConfigError(fmt::format(
        "explicit mode would need about {:.1f} GiB to hold {} ranks, more than this machine can spare "
        "({:.1f} GiB available); use --mode symmetric (or auto), which simulates one rank per pipeline "
        "stage, or fewer GPUs",
        need / (1u << 30), parallel.world_size, *available / (1u << 30)));
  throw ConfigError(fmt::format(
      "the simulation would need about {:.3g} GiB for {:.3g} tasks per rank, more than this machine "
      "can spare ({:.3g} GiB available): the model has too many layers, micro-batches or gradient "
      "buckets for one step; use a smaller global batch or a larger micro-batch",
      need / (1u << 30), tasks_per_rank(model, parallel), *available / (1u << 30)));
}

void check_memory_fits(const model::ModelSpec& model, const strategy::ParallelConfig& parallel,
                       bool every_rank) {
  if (simulation_memory_bytes(model, parallel, every_rank) <= kAlwaysFits) return;
  check_memory_fits(model, parallel, every_rank, available_memory_bytes());
}

}  // namespace ptsim::simulate

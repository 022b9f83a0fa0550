// Explicit mode's memory estimate and guard (see explicit_memory.hpp).
#include "ptsim/simulate/explicit_memory.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "ptsim/common/error.hpp"

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
constexpr double kSafety = 0.8;  // leave the rest to the workload, the OS and other programs
}  // namespace

double explicit_memory_bytes(const model::ModelSpec& model, const strategy::ParallelConfig& parallel) {
  const double ranks = static_cast<double>(parallel.world_size);
  const double microbatches = static_cast<double>(parallel.global_batch_size) /
                              static_cast<double>(parallel.dp * parallel.micro_batch_size);
  const double layers = std::ceil(static_cast<double>(model.num_layers) / static_cast<double>(parallel.pp));
  const double tasks = microbatches * layers * kTasksPerLayerAndMicrobatch;
  return ranks * (kBytesPerRank + tasks / 8);
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

void check_explicit_fits(const model::ModelSpec& model, const strategy::ParallelConfig& parallel,
                         std::optional<double> available) {
  if (!available) return;
  const double need = explicit_memory_bytes(model, parallel);
  if (need <= kSafety * *available) return;
  throw ConfigError(fmt::format(
      "explicit mode would need about {:.1f} GiB to hold {} ranks, more than this machine can spare "
      "({:.1f} GiB available); use --mode symmetric (or auto), which simulates one rank per pipeline "
      "stage, or fewer GPUs",
      need / (1u << 30), parallel.world_size, *available / (1u << 30)));
}

}  // namespace ptsim::simulate

// How much memory a simulation needs, and the guard that refuses a job this
// machine cannot hold before anything is allocated for it.
#pragma once

#include <cstdint>
#include <optional>

#include "ptsim/model/model_spec.hpp"
#include "ptsim/strategy/parallel_config.hpp"

namespace ptsim::simulate {

/// Tasks one rank runs in a step: about 32 per layer and micro-batch (measured
/// on GPT-3 and Llama 3) plus one per data-parallel gradient bucket.
double tasks_per_rank(const model::ModelSpec& model, const strategy::ParallelConfig& parallel);

/// Bytes a simulation needs: each pipeline stage's compiled program (about
/// 100 bytes a task, measured), and for every simulated rank its engine state
/// (streams, statistics, occupancy, communicator slots, queued events and
/// flows — 16 KiB, measured) plus one bit per task. `every_rank`: explicit
/// mode (all ranks); otherwise symmetric mode (one rank per stage and CP rank).
double simulation_memory_bytes(const model::ModelSpec& model, const strategy::ParallelConfig& parallel,
                               bool every_rank);

/// Memory this process may use: MemAvailable from /proc/meminfo, else the
/// physical memory; nullopt when neither can be read.
std::optional<double> available_memory_bytes();

/// Throws ConfigError when the simulation would need more than 80% of
/// `available` bytes: explicit mode is told to use symmetric mode, symmetric
/// mode that the model or batch is too large.
void check_memory_fits(const model::ModelSpec& model, const strategy::ParallelConfig& parallel,
                       bool every_rank, std::optional<double> available);
/// The same against this machine's available memory, which is read only for
/// jobs above 64 MiB: the kernel composes /proc/meminfo on every read (0.05
/// to 1.5 ms measured, as long as a symmetric run's whole loop takes a
/// tenth), and no machine that runs ptsim has less than that to spare.
void check_memory_fits(const model::ModelSpec& model, const strategy::ParallelConfig& parallel,
                       bool every_rank);

}  // namespace ptsim::simulate

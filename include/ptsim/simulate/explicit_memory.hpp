// How much memory explicit mode needs for a job, and the guard that refuses a
// job this machine cannot hold before anything is allocated for it.
#pragma once

#include <cstdint>
#include <optional>

#include "ptsim/model/model_spec.hpp"
#include "ptsim/strategy/parallel_config.hpp"

namespace ptsim::simulate {

/// Bytes explicit mode needs to simulate every rank of the job: per rank its
/// engine state (streams, statistics, occupancy, communicator slots, queued
/// events and flows — 16 KiB, measured) plus one bit per task it runs
/// (about 32 tasks per layer and micro-batch, measured on GPT-3 and Llama 3).
double explicit_memory_bytes(const model::ModelSpec& model, const strategy::ParallelConfig& parallel);

/// Memory this process may use: MemAvailable from /proc/meminfo, else the
/// physical memory; nullopt when neither can be read.
std::optional<double> available_memory_bytes();

/// Throws ConfigError suggesting symmetric mode when explicit mode would need
/// more than `available` bytes (the machine's, when not given).
void check_explicit_fits(const model::ModelSpec& model, const strategy::ParallelConfig& parallel,
                         std::optional<double> available = available_memory_bytes());

}  // namespace ptsim::simulate

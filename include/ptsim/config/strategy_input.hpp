// StrategyInput: a parallel strategy as the user gave it — command-line flags
// or a strategy file with the same keys — before defaults and checks. Each
// value remembers where it came from, so that errors point at the flag or key.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace ptsim::config {

struct StrategyInput {
  std::optional<std::int64_t> gpus;
  std::optional<std::int64_t> tp;
  std::optional<std::int64_t> pp;
  std::optional<std::int64_t> dp;
  std::optional<std::int64_t> micro_batch_size;
  std::optional<std::int64_t> global_batch_size;
  std::optional<std::int64_t> seq_length;
  std::optional<std::string> schedule;   // naive | gpipe | 1f1b
  std::optional<std::string> recompute;  // none | full
  std::optional<std::string> rank_order;  // e.g. tp-cp-ep-dp-pp
  std::optional<std::string> attention_backend;  // flash | unfused
  std::optional<std::string> precision;          // bf16 | fp8
  /// Field name ("tp", "global_batch_size", …) → how the user wrote it
  /// ("--tensor-model-parallel-size/--tp", "s.json: /tp").
  std::map<std::string, std::string> origin;

  /// Where `field` came from, or its flag name when the user did not set it.
  std::string where(const std::string& field) const;
};

/// Reads a strategy file. Keys: gpus, tensor_model_parallel_size (or tp),
/// pipeline_model_parallel_size (pp), data_parallel_size (dp),
/// micro_batch_size, global_batch_size, seq_length, schedule, recompute, rank_order,
/// attention_backend, precision.
StrategyInput load_strategy(const std::string& path);

/// Values set in `overrides` replace those of `base` (flags override a file).
StrategyInput merge(StrategyInput base, const StrategyInput& overrides);

}  // namespace ptsim::config

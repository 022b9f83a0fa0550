// What the pipeline and parallelism tests share: a GPT of equal layers, a
// pure pipeline strategy, and the bubble as a fraction of the pipelined part
// of the step.
#pragma once

#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace ptsim::test {

/// Equal stages: `layers` layers and a vocabulary of 128, so the embedding
/// and the LM head with its cross-entropy kernels (their launch overheads,
/// on layers this small) add 1–4% to the first and last (virtual) stage.
inline model::ModelSpec balanced_gpt(std::int64_t layers = 8) {
  const nlohmann::json j = {{"num_layers", layers}, {"hidden_size", 1024}, {"num_attention_heads", 16},
                            {"vocab_size", 128},    {"seq_length", 512}};
  return config::parse_model(j, "balanced", "balanced");
}

/// p stages, one GPU each, m micro-batches of one sequence, under `schedule`;
/// no host time (the schedules' closed forms count GPU time only, and these
/// layers' kernels are shorter than the default host cost of issuing them).
inline config::StrategyInput pipeline(std::int64_t p, std::int64_t m, const std::string& schedule) {
  config::StrategyInput s;
  s.host_overhead_us = 0;
  s.gpus = p;
  s.pp = p;
  s.global_batch_size = m;
  s.micro_batch_size = 1;
  s.schedule = schedule;
  return s;
}

/// The optimizer runs after the pipeline has drained; the bubble is a
/// fraction of the pipelined part of the step.
inline double bubble_fraction(const report::StepResult& r) {
  return r.breakdown.pipeline_bubble_s / (r.step_time_s - r.breakdown.optimizer_s);
}

}  // namespace ptsim::test

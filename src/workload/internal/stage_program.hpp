// Builds the program of one pipeline stage: its schedule's steps expanded into
// kernels and communication tasks with the dependencies between streams.
// Private to workload/.
#pragma once

#include <cstdint>
#include <vector>

#include "internal/name_table.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/strategy/parallel_config.hpp"
#include "ptsim/strategy/stage_partition.hpp"
#include "ptsim/taskgraph/program.hpp"
#include "ptsim/workload/stage_parameters.hpp"

namespace ptsim::workload::internal {

struct StageContext {
  const model::ModelSpec* model = nullptr;   // vocabulary already padded
  const strategy::ParallelConfig* config = nullptr;
  std::int64_t stage = 0;                    // of config->pp; micro-batches and their size are config's
  std::vector<strategy::LayerRange> chunks;  // layers of each model chunk on this stage
  RankParameters stage_parameters;         // for the optimizer step and gradient buckets
  /// The transformer layers' part of it that fp8 or nvfp4 training
  /// quantizes (all of them unless first_last_layers_bf16): weight casts and gathers.
  RankParameters quantized_layer_parameters;
  std::int64_t ddp_bucket_parameters = 0;  // gradient bucket size, parameters
  bool embedding_group = false;            // tied embeddings split over stages
  /// Ranks reducing dense and expert gradients (ZeRO shards over them).
  std::int64_t dense_group = 1, expert_group = 1;
  /// The stage's 2-D weights, under Muon (stage_weight_matrices); else empty.
  std::vector<WeightMatrix> weight_matrices;
};

/// Builds the stage's program into `program` (empty on entry); op names are
/// interned into `names`.
void build_stage_program(const StageContext& ctx, NameTable& names, taskgraph::Program& program);

}  // namespace ptsim::workload::internal

// The ops outside the transformer layers: the input embedding on the first
// pipeline stage, the final norm, LM head and vocab-parallel cross-entropy
// loss on the last, and the optimizer step on every rank.
#pragma once

#include <cstdint>

#include "ptsim/model/model_spec.hpp"
#include "ptsim/workload/layer_ops.hpp"
#include "ptsim/workload/op_spec.hpp"

namespace ptsim::workload {

/// Vocab-parallel word embedding (+ learned positions), dropout; its output
/// is all-reduced over TP (Megatron's VocabParallelEmbedding).
BlockOps embedding_ops(const model::ModelSpec& m, const MicroShape& shape);

/// Final norm, LM head (column-parallel over the vocabulary) and the
/// vocab-parallel cross-entropy in fp32, whose max, target-logit and sum-exp
/// reductions are three small all-reduces over TP.
BlockOps output_ops(const model::ModelSpec& m, const MicroShape& shape);

/// The last stage's block: output_ops, then each multi-token-prediction
/// depth (ModelSpec::mtp_num_layers) with its embedding, norms, projection,
/// transformer layer, final norm, LM head and loss; backward in reverse.
BlockOps last_stage_ops(const model::ModelSpec& m, const MicroShape& shape);

/// Mixed-precision Adam over `parameters` local parameters: reads the
/// gradient (`gradient_bytes`: 4 in fp32, 2 in bf16) and the master weight
/// and two moments (`state_bytes` S: 12 in fp32, fewer under the
/// precision-aware optimizer), writes those back and the bf16 weight:
/// G + S + S + W bytes per parameter (`weight_bytes` W: 2, or 0 when the
/// model weight is written by a cast of its own, as under fp8 parameter
/// gathering).
OpSpec optimizer_step_op(std::int64_t parameters, int gradient_bytes, int weight_bytes = 2, int state_bytes = 12);

}  // namespace ptsim::workload

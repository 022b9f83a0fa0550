// The end of a stage's step, after its last backward: the gradients not yet
// reduced, the tied embeddings' gradient sum over the embedding group, the
// TP sum of the gradients of parameters every TP rank holds whole, the
// optimizer (with FP8 parameter casts and their amax reductions), and
// ZeRO-1/2's parameter all-gather. Private to workload/.
#pragma once

#include <string>
#include <vector>

#include "internal/data_parallel.hpp"
#include "internal/program_builder.hpp"
#include "internal/stage_program.hpp"

namespace ptsim::workload::internal {

/// Instantiates the block `key` of step-end ops `ops`, issued in order and
/// counted as optimizer work.
void emit_step_end_ops(ProgramBuilder& out, const std::string& key, const std::vector<OpSpec>& ops);

/// `holds_first_virtual` / `holds_last_virtual`: the stage holds the first
/// (embedding) or the last (output layer) virtual stage.
void build_step_end(const StageContext& ctx, ProgramBuilder& out, DataParallel& dp, bool holds_first_virtual,
                    bool holds_last_virtual);

}  // namespace ptsim::workload::internal

// CompiledProgram: a TaskGraph flattened for the simulation loop — tasks in a
// contiguous array, dependencies in CSR form, each stream's issue order, and
// every compute task's duration asked of the cost model once. Private to engine/.
#pragma once

#include <cstdint>
#include <vector>

#include "ptsim/common/time.hpp"
#include "ptsim/cost/cost_model.hpp"
#include "ptsim/taskgraph/task_graph.hpp"

namespace ptsim::engine::internal {

struct CompiledProgram {
  std::vector<taskgraph::Task> tasks;
  std::vector<Time> compute_duration;  // per task; zero for communication tasks
  std::vector<std::uint32_t> pred_begin, preds;  // preds of t: [pred_begin[t], pred_begin[t+1])
  std::vector<std::uint32_t> succ_begin, succs;
  std::vector<std::vector<taskgraph::TaskId>> stream_tasks;  // issue order per stream
  std::vector<std::uint32_t> position;  // index of each task within its stream
  std::vector<bool> uses_slot;          // communicator slots some task of the program uses
};

/// Flattens `graph`; streams are numbered below num_streams. Throws
/// SimulationError when the graph has a cycle or a stream index is out of range.
CompiledProgram compile_program(const taskgraph::TaskGraph& graph, std::size_t num_streams,
                                std::size_t num_slots, const cost::CostModel& cost);

}  // namespace ptsim::engine::internal

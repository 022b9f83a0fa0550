// ProgramEmitter: appends tasks to a stage program and wires the dependencies
// between streams the way the framework's synchronisation does — a compute
// kernel waits for the communication whose result it consumes; communication
// waits for the kernel that produced its input. Private to workload/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptsim/taskgraph/task_graph.hpp"
#include "internal/name_table.hpp"
#include "ptsim/workload/op_spec.hpp"

namespace ptsim::workload::internal {

class ProgramEmitter {
 public:
  /// Appends to `graph` (Boost's adjacency_list has no cheap move: build in place).
  ProgramEmitter(NameTable& names, taskgraph::TaskGraph& graph) : names_(&names), graph_(graph) {}

  struct Where {
    std::int32_t microbatch = -1;
    std::int32_t layer = -1;
  };

  /// Emits one op named `name` (an interned id): kernels on the compute
  /// stream, TP all-reduces on the TP stream. alloc/free are the memory the
  /// task takes at its start and gives back at its end.
  taskgraph::TaskId emit(const OpSpec& op, std::uint32_t name, std::uint8_t category, Where where,
                         std::uint64_t alloc_bytes, std::uint64_t free_bytes);
  /// Interned ids of `prefix` + each op's name, in order.
  std::vector<std::uint32_t> names_of(const std::vector<OpSpec>& ops, const std::string& prefix);
  /// A receive the next kernel consumes.
  taskgraph::TaskId emit_recv(std::uint8_t stream, std::uint8_t slot, std::uint64_t bytes,
                              const std::string& name, Where where);
  /// A send of what the last kernel produced.
  taskgraph::TaskId emit_send(std::uint8_t stream, std::uint8_t slot, std::uint64_t bytes,
                              const std::string& name, Where where);
  /// A collective on `stream` over the data produced so far; `blocks_next`
  /// makes the next kernel wait for it.
  taskgraph::TaskId emit_collective(std::uint8_t stream, std::uint8_t slot, std::uint8_t category,
                                    std::uint64_t bytes, const std::string& name,
                                    bool blocks_next);
  /// Makes task `id` wait for the last task issued on `stream` before it, if any.
  void follow_stream(taskgraph::TaskId id, std::uint8_t stream);

  /// Makes the next kernel wait for the last task issued on `stream`, if any.
  void wait_for_stream(std::uint8_t stream);

 private:
  taskgraph::TaskId add(taskgraph::Task task);
  void after_last_kernel(taskgraph::TaskId id);

  NameTable* names_;
  taskgraph::TaskGraph& graph_;
  std::optional<taskgraph::TaskId> last_kernel_;
  std::vector<std::optional<taskgraph::TaskId>> last_on_stream_;
  std::vector<taskgraph::TaskId> before_next_;        // the next kernel waits for these
  std::vector<taskgraph::TaskId> before_after_next_;  // the kernel after next waits for these
};

}  // namespace ptsim::workload::internal

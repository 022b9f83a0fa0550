// TaskGraph on boost::adjacency_list (see task_graph.hpp).
#include "ptsim/taskgraph/task_graph.hpp"

#include <fmt/format.h>


#include "ptsim/common/error.hpp"

namespace ptsim::taskgraph {

TaskId TaskGraph::add_task(const Task& task) {
  return static_cast<TaskId>(boost::add_vertex(task, graph_));
}

void TaskGraph::add_dependency(TaskId before, TaskId after) {
  PTSIM_ASSERT(before < size() && after < size(), "dependency between existing tasks");
  PTSIM_ASSERT(before != after, "a task cannot depend on itself");
  boost::add_edge(before, after, graph_);
}

std::vector<TaskId> TaskGraph::successors(TaskId id) const {
  std::vector<TaskId> out;
  for (auto [it, end] = boost::adjacent_vertices(id, graph_); it != end; ++it)
    out.push_back(static_cast<TaskId>(*it));
  return out;
}

std::vector<TaskId> TaskGraph::predecessors(TaskId id) const {
  std::vector<TaskId> out;
  for (auto [it, end] = boost::inv_adjacent_vertices(id, graph_); it != end; ++it)
    out.push_back(static_cast<TaskId>(*it));
  return out;
}

void TaskGraph::validate_acyclic() const {
  // Kahn's algorithm: whatever keeps a predecessor after every source has been
  // peeled off lies on, or behind, a cycle.
  std::vector<std::size_t> pending(size());
  std::vector<TaskId> ready;
  for (TaskId v = 0; v < size(); ++v) {
    pending[v] = boost::in_degree(v, graph_);
    if (pending[v] == 0) ready.push_back(v);
  }
  std::size_t peeled = 0;
  while (!ready.empty()) {
    const TaskId v = ready.back();
    ready.pop_back();
    ++peeled;
    for (auto [it, end] = boost::adjacent_vertices(v, graph_); it != end; ++it)
      if (--pending[*it] == 0) ready.push_back(static_cast<TaskId>(*it));
  }
  if (peeled == size()) return;
  TaskId stuck = 0;
  while (pending[stuck] == 0) ++stuck;
  throw SimulationError(fmt::format(
      "task graph has a cycle: {} of {} tasks can never start, the first is task {} "
      "(name index {}, micro-batch {}, layer {})",
      size() - peeled, size(), stuck, graph_[stuck].name, graph_[stuck].microbatch,
      graph_[stuck].layer));
}

}  // namespace ptsim::taskgraph

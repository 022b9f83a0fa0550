// TaskGraph: the program one class of ranks runs in a training step — a DAG of
// Tasks in Boost.Graph, with each stream's issue order given by the order in
// which its tasks were added (as kernels are enqueued on a CUDA stream).
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <span>
#include <vector>

#include "ptsim/taskgraph/task.hpp"

namespace ptsim::taskgraph {

class TaskGraph {
 public:
  /// Appends a task at the end of its stream's issue order.
  TaskId add_task(const Task& task);
  /// `after` may start only once `before` has finished. Both ids must exist.
  void add_dependency(TaskId before, TaskId after);

  std::size_t size() const { return boost::num_vertices(graph_); }
  std::size_t num_dependencies() const { return boost::num_edges(graph_); }
  const Task& task(TaskId id) const { return graph_[id]; }

  std::vector<TaskId> successors(TaskId id) const;
  std::vector<TaskId> predecessors(TaskId id) const;
  /// Calls f(TaskId) for each successor / predecessor, without allocating.
  template <typename F>
  void for_each_successor(TaskId id, F&& f) const {
    for (auto [it, end] = boost::adjacent_vertices(id, graph_); it != end; ++it)
      f(static_cast<TaskId>(*it));
  }
  template <typename F>
  void for_each_predecessor(TaskId id, F&& f) const {
    for (auto [it, end] = boost::inv_adjacent_vertices(id, graph_); it != end; ++it)
      f(static_cast<TaskId>(*it));
  }

  /// Throws SimulationError naming a task on a cycle when the graph is not a DAG.
  void validate_acyclic() const;

 private:
  // Edges in a vector too (Boost's default is a std::list: one allocation each).
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Task,
                                      boost::no_property, boost::no_property, boost::vecS>;
  Graph graph_;
};

}  // namespace ptsim::taskgraph

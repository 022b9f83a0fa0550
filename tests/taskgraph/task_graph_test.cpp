// TaskGraph: a DAG in Boost.Graph; cycles are reported, not looped on.
#include "ptsim/taskgraph/task_graph.hpp"

#include "ptsim/common/error.hpp"
#include "test_support.hpp"

using namespace ptsim;
using taskgraph::Task;

TEST_CASE("TaskGraph keeps dependencies both ways and finds cycles", "[taskgraph]") {
  taskgraph::TaskGraph g;
  const auto a = g.add_task(Task{});
  const auto b = g.add_task(Task{});
  const auto c = g.add_task(Task{});
  g.add_dependency(a, b);
  g.add_dependency(b, c);
  CHECK(g.size() == 3);
  CHECK(g.num_dependencies() == 2);
  CHECK(g.successors(a) == std::vector<taskgraph::TaskId>{b});
  CHECK(g.predecessors(c) == std::vector<taskgraph::TaskId>{b});
  CHECK_NOTHROW(g.validate_acyclic());
  g.add_dependency(c, a);
  CHECK_THROWS_WITH(g.validate_acyclic(), Catch::Contains("3 of 3 tasks can never start"));
}

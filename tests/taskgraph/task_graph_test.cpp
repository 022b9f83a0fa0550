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

TEST_CASE("A Program numbers its instances' tasks in order and keeps links forward", "[taskgraph]") {
  taskgraph::Program p;
  taskgraph::TaskGraph pair;
  const auto a = pair.add_task(Task{});
  const auto b = pair.add_task(Task{});
  pair.add_dependency(a, b);
  const auto block = p.add_block(std::move(pair));
  taskgraph::TaskGraph one;
  one.add_task(Task{});
  const auto single = p.add_block(std::move(one));
  p.add_instance(block, 0, 3);   // tasks 0, 1
  p.add_instance(single, 0, -1); // task 2
  p.add_instance(block, 1, 3);   // tasks 3, 4
  p.add_link({0, 1}, {1, 0});
  CHECK(p.num_tasks() == 5);
  CHECK(p.global({2, 1}) == 4);
  CHECK(p.locate(3).instance == 2);
  CHECK(p.locate(3).task == 0);
  CHECK(p.task(4).microbatch == 1);
  CHECK(p.task(4).layer == 3);
  CHECK_THROWS(p.add_link({2, 0}, {1, 0}));  // backwards
}

TEST_CASE("An attention task's value head dim is read back from its FLOPs", "[taskgraph]") {
  // 4 batch·heads, 1024 queries and keys, query/key head dim 192: forward
  // 2·4·1024²·(192 + 128) FLOPs, backward twice that.
  taskgraph::Task t;
  t.kernel = taskgraph::KernelClass::Attention;
  t.shape = {4, 1024, 1024, 192};
  t.flops = 2.0 * 4 * 1024 * 1024 * (192 + 128);
  CHECK(taskgraph::attention_value_head_dim(t) == Approx(128));
  t.flags = taskgraph::kBackwardPass;
  t.flops *= 2;
  CHECK(taskgraph::attention_value_head_dim(t) == Approx(128));
  // A window of 128 keys over 1024 queries: 128·129/2 + 896·128 scores a head.
  t.flags = taskgraph::kSlidingWindow;
  t.shape = {4, 1024, 128, 64};
  t.flops = 2.0 * 4 * (128.0 * 129 / 2 + 896.0 * 128) * (64 + 64);
  CHECK(taskgraph::attention_value_head_dim(t) == Approx(64));
  t.shape = {0, 1024, 1024, 64};
  CHECK(taskgraph::attention_value_head_dim(t) == 0);
}

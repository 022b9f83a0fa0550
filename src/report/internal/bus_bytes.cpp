// Bus bytes per category (see bus_bytes.hpp): a pass over the rank's blocks,
// each counted as many times as the program runs it.
#include "bus_bytes.hpp"

#include <map>
#include <tuple>

namespace ptsim::report::internal {

namespace {

using taskgraph::CollectiveKind;
using taskgraph::Task;
using taskgraph::TaskKind;

// How a task's payload S becomes bus bytes on n members: S·(n−1)/n times
// `ring_passes`, or S itself (ring_passes 0), or nothing (a receive).
enum class Shape : std::uint8_t { Nothing, Payload, OnePass, TwoPasses };

Shape shape_of(const Task& task) {
  switch (task.collective) {
    case CollectiveKind::AllReduce: return Shape::TwoPasses;  // reduce-scatter then all-gather
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllToAll: return Shape::OnePass;
    case CollectiveKind::PointToPoint: return task.kind == TaskKind::Send ? Shape::Payload : Shape::Nothing;
    case CollectiveKind::ExpertDispatch:  // the rank's tokens, one copy each
    case CollectiveKind::None:
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce: return Shape::Payload;
  }
  return Shape::Payload;
}

double factor(Shape shape, double n) {
  switch (shape) {
    case Shape::Nothing: return 0;
    case Shape::Payload: return 1;
    case Shape::OnePass: return (n - 1) / n;
    case Shape::TwoPasses: return 2 * (n - 1) / n;
  }
  return 1;
}

}  // namespace

std::vector<double> bus_bytes_by_category(const taskgraph::Workload& w, Rank rank) {
  const taskgraph::Program& program = w.programs[w.program_of_rank[rank]];
  std::vector<std::uint64_t> runs(program.num_blocks(), 0);
  for (const taskgraph::BlockInstance& instance : program.instances()) ++runs[instance.block];
  // Payloads summed exactly, by category, shape and communicator size, and
  // scaled once: the sum does not depend on the order tasks are visited in.
  std::map<std::tuple<std::uint8_t, Shape, std::size_t>, std::uint64_t> payload;
  for (std::uint32_t b = 0; b < program.num_blocks(); ++b) {
    if (runs[b] == 0) continue;
    const taskgraph::TaskGraph& block = program.block(b);
    for (taskgraph::TaskId t = 0; t < block.size(); ++t) {
      const Task& task = block.task(t);
      if (task.kind == TaskKind::Compute) continue;
      const taskgraph::CommunicatorId id = w.communicator(rank, task.comm_slot);
      const std::size_t n = id == taskgraph::kNoCommunicator ? 1 : w.communicators[id].members.size();
      payload[{task.category, shape_of(task), n}] += task.bytes * runs[b];
    }
  }
  std::vector<double> out(w.category_names.size(), 0.0);
  for (const auto& [key, bytes] : payload) {
    const auto& [category, shape, n] = key;
    out[category] += factor(shape, static_cast<double>(n)) * static_cast<double>(bytes);
  }
  return out;
}

}  // namespace ptsim::report::internal

// Transfer plans per communicator, and the phases that run alone (see
// transfer_plans.hpp).
#include "internal/transfer_plans.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <stdexcept>

namespace ptsim::engine::internal {

namespace {
constexpr std::uint32_t kNobody = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint32_t kSeveral = kNobody - 1;

// Folds one more user into a slot that records "nobody", "only u" or "several".
void note_user(std::uint32_t& slot, std::uint32_t user) {
  slot = slot == kNobody || slot == user ? user : kSeveral;
}
}  // namespace

TransferPlans::TransferPlans(const taskgraph::Workload& w, const cost::CostModel& cost,
                             const FlowNetwork& network, std::vector<double> weights)
    : w_(w), cost_(cost), network_(network), weights_(std::move(weights)), by_comm_(w.communicators.size()) {}

PlannedTransfer& TransferPlans::add(taskgraph::CommunicatorId id, const taskgraph::Task& task) {
  PlannedTransfer p;
  p.key = PlanKey::of(task);
  p.plan = std::make_unique<cost::TransferPlan>(cost_.communication_plan(task, w_.communicators[id]));
  p.compute_slowdown = cost_.compute_slowdown_beside(task, w_.communicators[id]);
  p.alone.assign(p.plan->phases.size(), std::nullopt);
  p.rest_alone.assign(p.plan->phases.size(), std::nullopt);
  by_comm_[id].push_back(std::move(p));
  return by_comm_[id].back();
}

void TransferPlans::plan_ahead(const std::vector<SimulatedProgram>& ranks) {
  // Every plan the simulated ranks will ask for, and the stream each
  // communicator's operations run on: on one stream of each member they
  // cannot overlap (a member's stream waits until its operation is done).
  std::vector<std::uint32_t> stream_of(w_.communicators.size(), kNobody);
  // A program's communication tasks, one per (slot, plan key, kind, stream)
  // in program order: thousands of ranks share a few programs.
  std::map<const CompiledProgram*, std::vector<const taskgraph::Task*>> distinct;
  const auto distinct_of = [&](const CompiledProgram* program) -> const std::vector<const taskgraph::Task*>& {
    auto [it, fresh] = distinct.try_emplace(program);
    if (!fresh) return it->second;
    std::set<std::tuple<std::uint8_t, PlanKey, taskgraph::TaskKind, std::uint8_t>> seen;
    for (const CompiledBlock& block : program->blocks)
      for (const taskgraph::Task& task : block.tasks)
        if (task.kind != taskgraph::TaskKind::Compute &&
            seen.emplace(task.comm_slot, PlanKey::of(task), task.kind, task.stream).second)
          it->second.push_back(&task);
    return it->second;
  };
  try {
    for (const SimulatedProgram& r : ranks)
      for (const taskgraph::Task* task : distinct_of(r.program)) {
        const auto id = w_.communicator(r.rank, task->comm_slot);
        if (id == taskgraph::kNoCommunicator) continue;  // the run reports it where it happens
        get(id, *task);
        note_user(stream_of[id], task->stream);
      }
  } catch (const std::runtime_error&) {
    return;  // a plan the cost model refuses: the run asks again and reports it in place
  }

  // Which communicator uses each link, over every plan of every phase.
  std::vector<std::uint32_t> user_of(cost_.links().count(), kNobody);
  for (std::uint32_t c = 0; c < by_comm_.size(); ++c)
    for (const PlannedTransfer& p : by_comm_[c])
      for (const cost::PhaseSpec& phase : p.plan->phases)
        for (const cost::FlowSpec& f : phase.flows)
          for (const auto l : f.path.view()) note_user(user_of[l], c);

  // A phase runs alone when its communicator is serial, every link it
  // crosses is its communicator's only, and no two of its flows share a link.
  std::vector<std::uint32_t> seen(user_of.size(), 0);
  std::uint32_t stamp = 0;
  for (std::uint32_t c = 0; c < by_comm_.size(); ++c) {
    if (stream_of[c] >= kSeveral) continue;
    const double weight = std::max(1.0, weights_[c]);
    for (PlannedTransfer& p : by_comm_[c])
      for (std::size_t k = 0; k < p.plan->phases.size(); ++k) {
        const cost::PhaseSpec& phase = p.plan->phases[k];
        ++stamp;
        bool alone = !phase.flows.empty();
        Time slowest{};
        for (const cost::FlowSpec& f : phase.flows) {
          for (const auto l : f.path.view()) {
            alone = alone && user_of[l] == c && seen[l] != stamp;
            seen[l] = stamp;
          }
          const double rate = network_.rate_alone(f.path.view(), f.max_rate, weight);
          alone = alone && rate > 0;
          if (!alone) break;
          slowest = std::max(slowest, FlowNetwork::time_to_send(f.bytes, rate));
        }
        if (alone) p.alone[k] = slowest;
      }
  }

  // From the last phase back: the time to the transfer's end while every
  // phase from here on runs alone.
  for (auto& plans : by_comm_)
    for (PlannedTransfer& p : plans) {
      std::optional<Time> rest = Time{};
      for (std::size_t k = p.plan->phases.size(); k-- > 0;) {
        rest = rest && p.alone[k] ? std::optional<Time>(*p.alone[k] + p.plan->phases[k].latency + *rest) : std::nullopt;
        p.rest_alone[k] = rest;
      }
    }
}

}  // namespace ptsim::engine::internal

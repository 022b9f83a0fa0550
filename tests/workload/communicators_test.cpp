// The group communicators of a step partition the ranks as the layout says:
// every rank belongs to the group it reaches, all members of a group reach the
// same communicator, groups of one slot are disjoint, and their sizes are the
// parallel sizes (DualPipe's DP groups hold both mirrored stages).
#include <numeric>
#include <set>

#include "ptsim/workload/step_workload.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

void check_groups(const taskgraph::Workload& w, const std::string& slot_name, std::size_t size_expected,
                  std::size_t size_at_middle_stage, const strategy::RankLayout& layout) {
  const auto slot_it = std::find(w.comm_slot_names.begin(), w.comm_slot_names.end(), slot_name);
  REQUIRE(slot_it != w.comm_slot_names.end());
  const auto slot = static_cast<std::uint8_t>(slot_it - w.comm_slot_names.begin());
  std::set<taskgraph::CommunicatorId> ids;
  std::set<Rank> covered;
  const std::int64_t pp = layout.size(strategy::Axis::Pp);
  for (Rank r = 0; r < w.world_size; ++r) {
    const auto id = w.communicator(r, slot);
    const bool middle = pp % 2 == 1 && layout.coordinate(r, strategy::Axis::Pp) == pp / 2;
    const std::size_t expected = middle ? size_at_middle_stage : size_expected;
    if (expected < 2) {
      CHECK(id == taskgraph::kNoCommunicator);
      continue;
    }
    REQUIRE(id != taskgraph::kNoCommunicator);
    const auto& members = w.communicators[id].members;
    CHECK(members.size() == expected);
    CHECK(std::is_sorted(members.begin(), members.end()));
    CHECK(std::find(members.begin(), members.end(), r) != members.end());
    for (const Rank m : members) CHECK(w.communicator(m, slot) == id);
    if (ids.insert(id).second)
      for (const Rank m : members) CHECK(covered.insert(m).second);  // disjoint groups
  }
}

}  // namespace

TEST_CASE("Group communicators partition the ranks by the layout", "[workload]") {
  const auto dense = test::shipped_model("tiny");
  const auto moe = test::shipped_model("mixtral-8x7b");
  struct Case {
    const model::ModelSpec* model;
    std::int64_t gpus, tp, cp, pp, ep, etp;
    const char* schedule;
    const char* order;
    const char* precision;
  };
  for (const Case& c : {Case{&dense, 64, 2, 2, 4, 1, 0, "1f1b", "tp-cp-ep-dp-pp", "bf16"},
                        Case{&dense, 32, 2, 1, 2, 1, 0, "dualpipe", "tp-cp-ep-dp-pp", "bf16"},
                        Case{&dense, 64, 4, 1, 4, 1, 0, "dualpipe", "tp-pp-dp", "fp8"},
                        Case{&dense, 64, 2, 2, 2, 1, 0, "1f1b", "dp-tp-cp-pp", "fp8"},
                        Case{&moe, 64, 2, 1, 4, 4, 1, "dualpipe", "tp-cp-ep-dp-pp", "bf16"},
                        Case{&moe, 64, 2, 1, 2, 8, 2, "1f1b", "tp-ep-dp-pp", "bf16"}}) {
    config::StrategyInput s;
    s.gpus = c.gpus;
    s.tp = c.tp;
    s.cp = c.cp;
    s.pp = c.pp;
    s.ep = c.ep;
    if (c.etp > 0) s.expert_tp = c.etp;
    s.schedule = c.schedule;
    s.rank_order = c.order;
    s.precision = c.precision;
    s.global_batch_size = 64;
    s.seq_length = 256;
    if (c.cp > 1 || c.ep > 1) s.sequence_parallel = true;
    INFO(c.gpus << " GPUs tp " << c.tp << " cp " << c.cp << " pp " << c.pp << " ep " << c.ep << " "
                << c.schedule << " " << c.order << " " << c.precision);
    const config::ResolvedRun run = config::resolve_run(*c.model, s);
    const workload::StepWorkload step = workload::build_step_workload(run.model, run.parallel);
    const auto& p = run.parallel;
    const bool dualpipe = std::string(c.schedule) == "dualpipe";
    check_groups(step.workload, "tp", static_cast<std::size_t>(p.tp), static_cast<std::size_t>(p.tp), step.layout);
    const auto dp = static_cast<std::size_t>(p.dp * p.cp);
    check_groups(step.workload, "dp", dualpipe ? 2 * dp : dp, dp, step.layout);
    if (std::string(c.precision) == "fp8")
      check_groups(step.workload, "amax", static_cast<std::size_t>(p.tp) * dp, static_cast<std::size_t>(p.tp) * dp,
                   step.layout);
    if (c.ep > 1) {
      check_groups(step.workload, "ep", static_cast<std::size_t>(p.ep), static_cast<std::size_t>(p.ep), step.layout);
      const auto etp = static_cast<std::size_t>(p.expert_tp);
      check_groups(step.workload, "etp", etp, etp, step.layout);
      const auto edp = static_cast<std::size_t>(p.world_size / (p.pp * p.ep * p.expert_tp));
      check_groups(step.workload, "edp", dualpipe ? 2 * edp : edp, edp, step.layout);
    }
  }
}

TEST_CASE("Optimizer instances split the data-parallel groups into contiguous runs and their replicas",
          "[workload][megatron_fsdp]") {
  // Mixtral 8x7B on 32 ranks, EP 8, two instances: dense DP 32 as two runs
  // of 16 ranks (0-15, 16-31), each rank's replicas 16 apart; experts' DP
  // 4 (expert-DP coordinate r / 8) as runs of 2 coordinates, {0, 8} and
  // {16, 24} for rank 0's expert, its replica across the instances 16 apart
  // (Megatron-Core's intra and inter partial data-parallel groups).
  config::StrategyInput s;
  s.gpus = 32;
  s.ep = 8;
  s.global_batch_size = 32;
  s.seq_length = 256;
  s.distributed_optimizer = true;
  s.optimizer_instances = 2;
  const config::ResolvedRun run = config::resolve_run(test::shipped_model("mixtral-8x7b"), s);
  const workload::StepWorkload step = workload::build_step_workload(run.model, run.parallel);
  const auto& w = step.workload;
  const auto members = [&](Rank r, const std::string& name) {
    const auto it = std::find(w.comm_slot_names.begin(), w.comm_slot_names.end(), name);
    REQUIRE(it != w.comm_slot_names.end());
    const auto id = w.communicator(r, static_cast<std::uint8_t>(it - w.comm_slot_names.begin()));
    REQUIRE(id != taskgraph::kNoCommunicator);
    return w.communicators[id].members;
  };
  std::vector<Rank> run0(16);
  std::iota(run0.begin(), run0.end(), Rank{0});
  CHECK(members(3, "dp") == run0);
  CHECK(members(3, "dp_replicate") == std::vector<Rank>{3, 19});
  CHECK(members(3, "edp") == std::vector<Rank>{3, 11});
  CHECK(members(3, "edp_replicate") == std::vector<Rank>{3, 19});
  CHECK(members(27, "edp") == std::vector<Rank>{19, 27});
  check_groups(w, "dp", 16, 16, step.layout);
  check_groups(w, "dp_replicate", 2, 2, step.layout);
  check_groups(w, "edp", 2, 2, step.layout);
  check_groups(w, "edp_replicate", 2, 2, step.layout);
}

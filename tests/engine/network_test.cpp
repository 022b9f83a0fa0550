// Transfers sharing links: max-min fair bandwidth, recomputed as transfers
// start and end. Hardware: every GPU its own NVLink domain of one, so all
// transfers cross NICs of 1 GB/s; no latencies; S bytes alone take S/1e9 s.
#include "ptsim/engine/simulator.hpp"

#include <fmt/format.h>

#include "engine/toy_hardware.hpp"
#include "ptsim/hardware/cluster.hpp"
#include "test_support.hpp"

using namespace ptsim;
using taskgraph::CollectiveKind;
using taskgraph::Task;
using taskgraph::TaskKind;

namespace {

hardware::HardwareProfile nic_only(std::int64_t pod_gpus = 0, double oversubscription = 1) {
  hardware::HardwareProfile hw = test::toy_hardware(1);  // one GPU a node: every transfer crosses NICs
  hw.fabric.pod_gpus = pod_gpus;
  hw.fabric.levels = pod_gpus > 0 ? 3 : 2;
  hw.fabric.oversubscription = oversubscription;
  return hw;
}

// Transfers, each its own pair of one-task programs: sender i and receiver i.
struct Transfer {
  Rank from, to;
  double megabytes;
};

engine::RunResult run(const hardware::HardwareProfile& hw, std::int64_t world,
                      const std::vector<Transfer>& transfers) {
  taskgraph::Workload w;
  w.world_size = world;
  // Transfer i runs on stream 1 + i and slot i of both ends, so that all of
  // them start at time 0.
  w.stream_names = {"compute"};
  w.stream_dimension = {""};
  w.category_names = {"compute", "comm"};
  w.op_names = {"transfer"};
  const std::size_t slots = transfers.size();
  for (std::size_t i = 0; i < slots; ++i) {
    w.stream_names.push_back(fmt::format("transfer{}", i));
    w.stream_dimension.push_back("x");
    w.comm_slot_names.push_back(fmt::format("transfer{}", i));
  }
  std::vector<taskgraph::TaskGraph> graphs(static_cast<std::size_t>(world));
  w.program_base_memory_bytes.assign(static_cast<std::size_t>(world), 0);
  w.communicator_of.assign(static_cast<std::size_t>(world) * slots, taskgraph::kNoCommunicator);
  for (Rank r = 0; r < world; ++r) w.program_of_rank.push_back(static_cast<std::uint32_t>(r));
  for (std::size_t i = 0; i < slots; ++i) {
    const auto& t = transfers[i];
    Task task;
    task.collective = CollectiveKind::PointToPoint;
    task.category = 1;
    task.bytes = static_cast<std::uint64_t>(t.megabytes * 1e6);
    task.stream = static_cast<std::uint8_t>(1 + i);
    task.comm_slot = static_cast<std::uint8_t>(i);
    task.kind = TaskKind::Send;
    graphs[static_cast<std::size_t>(t.from)].add_task(task);
    task.kind = TaskKind::Recv;
    graphs[static_cast<std::size_t>(t.to)].add_task(task);
    w.communicators.push_back({{t.from, t.to}, std::nullopt});
    const auto id = static_cast<taskgraph::CommunicatorId>(w.communicators.size() - 1);
    w.communicator_of[static_cast<std::size_t>(t.from) * slots + i] = id;
    w.communicator_of[static_cast<std::size_t>(t.to) * slots + i] = id;
  }
  for (auto& g : graphs) w.programs.push_back(taskgraph::Program::single(std::move(g)));
  const hardware::Cluster cluster(hw, world);
  const cost::CostModel cost(cluster);
  engine::RunOptions options;
  for (Rank r = 0; r < world; ++r) options.record_ranks.push_back(r);
  return engine::Simulator(w, cost).run(options);
}

// When the transfer `from` sent ended, in ms (its first task).
double sent_ms(const engine::RunResult& r, Rank from) {
  for (const auto& t : r.timeline)
    if (t.rank == from && t.task == 0) return t.end.seconds() * 1e3;
  return -1;
}

double ms_of(const engine::RunResult& r, Rank rank) {
  for (const auto& s : r.ranks)
    if (s.rank == rank) return s.finish.seconds() * 1e3;
  return -1;
}

}  // namespace

TEST_CASE("Two equal transfers into one NIC each take twice as long as one alone", "[engine][network]") {
  // Alone: 1 MB at 1 GB/s = 1 ms. Together they share rank 2's NIC in: 0.5 GB/s each.
  CHECK(ms_of(run(nic_only(), 3, {{0, 2, 1}}), 2) == Approx(1));
  const auto both = run(nic_only(), 3, {{0, 2, 1}, {1, 2, 1}});
  CHECK(ms_of(both, 0) == Approx(2));
  CHECK(ms_of(both, 1) == Approx(2));
}

TEST_CASE("A transfer is slowed only while it shares a link", "[engine][network]") {
  // 2 MB from 0 and 1 MB from 1 into rank 2: both at 0.5 GB/s until the short
  // one ends at 2 ms (1 MB each moved), then the long one alone at 1 GB/s for
  // its last MB: 3 ms in all, against 2 ms alone.
  const auto r = run(nic_only(), 3, {{0, 2, 2}, {1, 2, 1}});
  CHECK(ms_of(r, 1) == Approx(2));
  CHECK(ms_of(r, 0) == Approx(3));
  // Disjoint paths do not slow each other.
  const auto apart = run(nic_only(), 4, {{0, 2, 2}, {1, 3, 1}});
  CHECK(ms_of(apart, 0) == Approx(2));
  CHECK(ms_of(apart, 1) == Approx(1));
}

TEST_CASE("An oversubscribed uplink throttles only what crosses pods", "[engine][network]") {
  // Pods of 2 GPUs, 1:2 oversubscribed: a pod's uplink carries 2 · 1 GB/s / 2
  // = 1 GB/s. Two 1 MB transfers from pod 0 to pod 1 share it: 2 ms each. A
  // third inside pod 0 at the same time keeps its 1 ms.
  const auto hw = nic_only(2, 2.0);
  const auto r = run(hw, 6, {{0, 2, 1}, {1, 3, 1}, {4, 5, 1}});
  CHECK(ms_of(r, 0) == Approx(2));
  CHECK(ms_of(r, 1) == Approx(2));
  CHECK(ms_of(r, 4) == Approx(1));
  // Non-blocking (1:1): the uplink carries both at full rate.
  const auto open = run(nic_only(2, 1.0), 6, {{0, 2, 1}, {1, 3, 1}});
  CHECK(ms_of(open, 0) == Approx(1));
}

TEST_CASE("NVLink traffic does not feel InfiniBand load", "[engine][network]") {
  // Ranks 0–1 share an NVLink domain, 2–3 another. Rank 0 sends 1 MB to rank 1
  // over NVLink while rank 0's NIC receives 4 MB from rank 3 and rank 1's NIC
  // sends 4 MB to rank 2: the NVLink transfer still takes 1 ms.
  auto hw = nic_only();
  hw.gpus_per_node = 2;
  hw.nvlink.domain_gpus = 2;
  const auto r = run(hw, 4, {{0, 1, 1}, {3, 0, 4}, {1, 2, 4}});
  CHECK(sent_ms(r, 0) == Approx(1));
  CHECK(sent_ms(r, 3) == Approx(4));
}

TEST_CASE("Transfers that start together share a NIC as progressive filling says", "[engine][network]") {
  // 1, 2, 3 and 4 MB from ranks 0–3 into rank 4, all at time 0 (their rates
  // are solved once for the instant). Four share 1 GB/s until the 1 MB one ends
  // at 4 ms; three then share it until the 2 MB one's last MB is through
  // (3 ms more: 7 ms); two until 9 ms; the last one alone ends at 10 ms, when
  // all 10 MB have crossed the one NIC.
  const auto r = run(nic_only(), 5, {{0, 4, 1}, {1, 4, 2}, {2, 4, 3}, {3, 4, 4}});
  CHECK(sent_ms(r, 0) == Approx(4));
  CHECK(sent_ms(r, 1) == Approx(7));
  CHECK(sent_ms(r, 2) == Approx(9));
  CHECK(sent_ms(r, 3) == Approx(10));
  // Eight equal ones: each 1/8 of the NIC, all done at 8 ms.
  std::vector<Transfer> eight;
  for (Rank i = 0; i < 8; ++i) eight.push_back({i, 8, 1});
  const auto e = run(nic_only(), 9, eight);
  for (Rank i = 0; i < 8; ++i) CHECK(sent_ms(e, i) == Approx(8));
}

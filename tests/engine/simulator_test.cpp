// The engine on small hand-built workloads whose timings follow by hand.
// Hardware: 1 TB/s HBM, no launch overhead, 1 GB/s NVLink and NICs without
// latency, so a kernel moving B bytes takes B/1e12 s and a transfer of S bytes S/1e9 s.
#include "ptsim/engine/simulator.hpp"

#include "engine/toy_hardware.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/hardware/cluster.hpp"
#include "test_support.hpp"

using namespace ptsim;
using taskgraph::CollectiveKind;
using taskgraph::Task;
using taskgraph::TaskKind;

namespace {

constexpr std::uint8_t kComm = 1;

// Time during which exactly the streams of `mask` ran (zero if never).
Time occupied(const engine::RankStats& r, std::uint32_t mask) {
  const auto it = r.occupancy.find(mask);
  return it == r.occupancy.end() ? Time{} : it->second;
}

Task kernel(double milliseconds, std::uint64_t alloc = 0, std::uint64_t release = 0) {
  Task t;
  t.compute = taskgraph::ComputeKind::MemoryBound;
  t.bytes = static_cast<std::uint64_t>(milliseconds * 1e9);  // 1e12 bytes/s
  t.alloc_bytes = alloc;
  t.free_bytes = release;
  return t;
}

Task comm(TaskKind kind, CollectiveKind collective, double milliseconds, std::uint8_t slot = 0) {
  Task t;
  t.comm_slot = slot;
  t.kind = kind;
  t.collective = collective;
  t.stream = kComm;
  t.category = 1;
  t.bytes = static_cast<std::uint64_t>(milliseconds * 1e6);  // 1 GB/s
  return t;
}

struct Comm {
  std::uint8_t slot = 0;
  std::vector<Rank> members;
};

// One program per rank, two communicator slots; `comms` lists the communicators.
taskgraph::Workload make_workload(std::vector<taskgraph::TaskGraph> programs, std::vector<Comm> comms) {
  taskgraph::Workload w;
  w.world_size = static_cast<std::int64_t>(programs.size());
  w.stream_names = {"compute", "comm"};
  w.stream_dimension = {"", "x"};
  w.category_names = {"compute", "comm"};
  w.comm_slot_names = {"a", "b"};
  w.op_names = {"op"};
  for (auto& g : programs) w.programs.push_back(taskgraph::Program::single(std::move(g)));
  for (std::size_t r = 0; r < w.programs.size(); ++r) {
    w.program_of_rank.push_back(static_cast<std::uint32_t>(r));
    w.program_base_memory_bytes.push_back(100);
  }
  w.communicator_of.assign(w.programs.size() * 2, taskgraph::kNoCommunicator);
  for (const auto& c : comms) {
    w.communicators.push_back({c.members, std::nullopt});
    for (const Rank r : c.members)
      w.communicator_of[static_cast<std::size_t>(r) * 2 + c.slot] =
          static_cast<taskgraph::CommunicatorId>(w.communicators.size() - 1);
  }
  return w;
}

engine::RunResult run(const taskgraph::Workload& w, engine::RunOptions options = {}, double host_ms = 0) {
  static const hardware::HardwareProfile hw = test::toy_hardware(8);
  const hardware::Cluster cluster(hw, w.world_size);
  const cost::CostModel cost(cluster, cost::HostIssue{host_ms * 1e-3});
  return engine::Simulator(w, cost).run(options);
}

double ms(Time t) { return t.seconds() * 1e3; }

}  // namespace

TEST_CASE("Compute, transfer, compute across two ranks (SimGrid's dag-comm)", "[engine]") {
  // rank 0: A (1 ms) then send 1 MB; rank 1: receive, then B (2 ms) needing it.
  // A ends at 1 ms, the transfer runs 1–2 ms, B runs 2–4 ms.
  taskgraph::TaskGraph p0, p1;
  const auto a = p0.add_task(kernel(1));
  const auto send = p0.add_task(comm(TaskKind::Send, CollectiveKind::PointToPoint, 1));
  p0.add_dependency(a, send);
  const auto recv = p1.add_task(comm(TaskKind::Recv, CollectiveKind::PointToPoint, 1));
  const auto b = p1.add_task(kernel(2));
  p1.add_dependency(recv, b);
  const auto w = make_workload({p0, p1}, {{0, {0, 1}}});
  const auto r = run(w, {{}, {0, 1}, 1, {}});
  CHECK(ms(r.makespan) == Approx(4));
  CHECK(ms(r.ranks[0].finish) == Approx(2));
  CHECK(ms(r.ranks[1].finish) == Approx(4));
  // Rank 1: idle 0–1 ms, receiving 1–2 ms (stream bit 1), computing 2–4 ms (bit 0).
  CHECK(ms(occupied(r.ranks[1], 0)) == Approx(1));
  CHECK(ms(occupied(r.ranks[1], 2)) == Approx(1));
  CHECK(ms(occupied(r.ranks[1], 1)) == Approx(2));
  CHECK(r.tasks == 4);
  CHECK(r.events == 2 + 1);  // two kernels, one transfer
  REQUIRE(r.timeline.size() == 4);
  CHECK(ms(r.timeline.back().start) == Approx(2));
}

TEST_CASE("A collective starts when its last member arrives", "[engine]") {
  // Ranks compute 1, 2 and 3 ms, then all-reduce 6 MB over three ranks:
  // 2(n−1)/n · S/B = 4/3 · 6 ms = 8 ms, from 3 ms on for everyone.
  std::vector<taskgraph::TaskGraph> programs(3);
  for (int i = 0; i < 3; ++i) {
    const auto k = programs[static_cast<std::size_t>(i)].add_task(kernel(i + 1));
    const auto c = programs[static_cast<std::size_t>(i)].add_task(
        comm(TaskKind::Collective, CollectiveKind::AllReduce, 6));
    programs[static_cast<std::size_t>(i)].add_dependency(k, c);
  }
  const auto r = run(make_workload(programs, {{0, {0, 1, 2}}}));
  for (const auto& rank : r.ranks) CHECK(ms(rank.finish) == Approx(11));
  // Rank 0 waited 2 ms at the rendezvous: idle, not communicating.
  CHECK(ms(occupied(r.ranks[0], 0)) == Approx(2));
  CHECK(ms(occupied(r.ranks[0], 2)) == Approx(8));
  CHECK(ms(r.ranks[0].categories[1].busy) == Approx(8));
}

TEST_CASE("Streams of a rank run side by side, each in issue order", "[engine]") {
  // compute: K1 (2 ms) then K2 (1 ms); comm: a 1 ms all-reduce on one rank
  // group of itself and another rank that sends nothing else.
  taskgraph::TaskGraph p0, p1;
  p0.add_task(kernel(2));
  p0.add_task(kernel(1));
  p0.add_task(comm(TaskKind::Collective, CollectiveKind::AllReduce, 2));  // 2·1/2·2 ms = 2 ms
  p1.add_task(comm(TaskKind::Collective, CollectiveKind::AllReduce, 2));
  const auto r = run(make_workload({p0, p1}, {{0, {0, 1}}}));
  CHECK(ms(r.ranks[0].finish) == Approx(3));
  CHECK(ms(occupied(r.ranks[0], 3)) == Approx(2));  // kernel and all-reduce together
  CHECK(ms(occupied(r.ranks[0], 1)) == Approx(1));
}

TEST_CASE("Links between block instances order tasks across streams, in one program shared by ranks",
          "[engine]") {
  // Block A: a 1 ms kernel, then a 2 ms all-reduce on the comm stream that
  // waits for it. Block B: a 2 ms kernel. Instances A0 B0 A1 B1; links: each
  // B kernel waits for the all-reduce of the A before it (another stream),
  // each A kernel after the first for the B kernel before it. Both ranks run
  // the same program. By hand: A0.k 0–1, A0.ar 1–3, B0.k 3–5, A1.k 5–6,
  // A1.ar 6–8, B1.k 8–10. Without the cross-stream link B0.k would start at 1.
  taskgraph::TaskGraph a, b;
  const auto a_kernel = a.add_task(kernel(1));
  const auto a_reduce = a.add_task(comm(TaskKind::Collective, CollectiveKind::AllReduce, 2));
  a.add_dependency(a_kernel, a_reduce);
  const auto b_kernel = b.add_task(kernel(2));
  taskgraph::Program program;
  const auto block_a = program.add_block(a), block_b = program.add_block(b);
  std::uint32_t previous_b = 0;
  for (std::int32_t mb = 0; mb < 2; ++mb) {
    const auto ia = program.add_instance(block_a, mb, -1);
    if (mb > 0) program.add_link({previous_b, b_kernel}, {ia, a_kernel});
    const auto ib = program.add_instance(block_b, mb, -1);
    program.add_link({ia, a_reduce}, {ib, b_kernel});
    previous_b = ib;
  }
  taskgraph::Workload w = make_workload({taskgraph::TaskGraph{}, taskgraph::TaskGraph{}}, {{0, {0, 1}}});
  w.programs = {program};
  w.program_of_rank = {0, 0};
  w.program_base_memory_bytes = {100};
  const auto r = run(w);
  REQUIRE(r.ranks.size() == 2);
  CHECK(r.tasks == 12);
  for (const auto& rank : r.ranks) {
    CHECK(ms(rank.finish) == Approx(10));
    CHECK(ms(occupied(rank, 1)) == Approx(6));  // kernels alone: 1 + 2 + 1 + 2
    CHECK(ms(occupied(rank, 2)) == Approx(4));  // all-reduces alone: 2 + 2
    CHECK(ms(occupied(rank, 0)) == Approx(0));
    CHECK(rank.categories[0].count == 4);
    CHECK(rank.categories[1].count == 2);
  }
}

TEST_CASE("Memory is allocated when a task starts and freed when it ends", "[engine]") {
  taskgraph::TaskGraph p;
  p.add_task(kernel(1, 50));      // +50
  p.add_task(kernel(1, 30));      // +30 → 180 with the base of 100
  p.add_task(kernel(1, 0, 80));   // −80 at its end
  p.add_task(kernel(1, 10));      // +10
  const auto r = run(make_workload({p}, {}), {{}, {0}, 1, {}});
  CHECK(r.ranks[0].base_memory_bytes == 100);
  CHECK(r.ranks[0].peak_memory_bytes == 180);
  CHECK(ms(r.ranks[0].peak_memory_at) == Approx(1));
  CHECK(r.memory_samples.back().bytes == 110);
}

TEST_CASE("A deadlock names the blocked ranks and what they wait for", "[engine]") {
  // Each rank receives from the other before it sends, on one stream: the
  // sends queue behind receives that can never match.
  taskgraph::TaskGraph p0, p1;
  p0.add_task(comm(TaskKind::Recv, CollectiveKind::PointToPoint, 1, 0));
  p0.add_task(comm(TaskKind::Send, CollectiveKind::PointToPoint, 1, 1));
  p1.add_task(comm(TaskKind::Recv, CollectiveKind::PointToPoint, 1, 1));
  p1.add_task(comm(TaskKind::Send, CollectiveKind::PointToPoint, 1, 0));
  auto w = make_workload({p0, p1}, {{0, {1, 0}}, {1, {0, 1}}});
  try {
    run(w);
    FAIL("expected a SimulationError");
  } catch (const SimulationError& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Catch::Contains("simulation deadlocked: 2 rank(s)"));
    CHECK_THAT(message, Catch::Contains("rank 0:"));
    CHECK_THAT(message, Catch::Contains("waits for the other members of communicator 0 (1 of 2 arrived)"));
  }
}

TEST_CASE("Mismatched operations on a communicator are an error", "[engine]") {
  taskgraph::TaskGraph p0, p1;
  p0.add_task(comm(TaskKind::Collective, CollectiveKind::AllReduce, 1));
  p1.add_task(comm(TaskKind::Collective, CollectiveKind::AllReduce, 2));
  CHECK_THROWS_WITH(run(make_workload({p0, p1}, {{0, {0, 1}}})),
                    Catch::Contains("mismatched operations on communicator 0"));
}

TEST_CASE("A cyclic program is rejected before it runs", "[engine]") {
  taskgraph::TaskGraph p;
  const auto a = p.add_task(kernel(1));
  const auto b = p.add_task(kernel(1));
  p.add_dependency(a, b);
  p.add_dependency(b, a);
  CHECK_THROWS_WITH(run(make_workload({p}, {})), Catch::Contains("task graph has a cycle"));
}

TEST_CASE("Simulating a subset of ranks treats absent peers as symmetric", "[engine]") {
  // Rank 1 alone: its collective starts when it arrives and costs what the
  // two-rank all-reduce costs (2·1/2 · 4 ms = 4 ms), after its 1 ms kernel.
  std::vector<taskgraph::TaskGraph> programs(2);
  for (auto& p : programs) {
    const auto k = p.add_task(kernel(1));
    const auto c = p.add_task(comm(TaskKind::Collective, CollectiveKind::AllReduce, 4));
    p.add_dependency(k, c);
  }
  const auto r = run(make_workload(programs, {{0, {0, 1}}}), {{1}, {}, 1, {}});
  REQUIRE(r.ranks.size() == 1);
  CHECK(r.ranks[0].rank == 1);
  CHECK(ms(r.makespan) == Approx(5));
}

TEST_CASE("Kernels slow down while communication runs on their GPU", "[engine]") {
  // Slowdown 0.5: a 10 ms kernel runs at 1/1.5 speed while a 5 ms transfer
  // runs beside it (3.33 ms of its work done by 5 ms), then at full speed for
  // the remaining 6.67 ms: it ends at 11.67 ms.
  taskgraph::TaskGraph p0, p1;
  p0.add_task(kernel(10));
  p0.add_task(comm(TaskKind::Send, CollectiveKind::PointToPoint, 5));
  p1.add_task(comm(TaskKind::Recv, CollectiveKind::PointToPoint, 5));
  auto hw = test::toy_hardware(8);
  hw.gpu.comm_compute_slowdown = 0.5;
  const hardware::Cluster cluster(hw, 2);
  const cost::CostModel cost(cluster);
  const auto w = make_workload({p0, p1}, {{0, {0, 1}}});
  const auto r = engine::Simulator(w, cost).run({{}, {0}, 1, {}});
  CHECK(ms(r.ranks[0].finish) == Approx(10 + 5.0 / 3).epsilon(1e-6));
  CHECK(ms(r.timeline[0].end) == Approx(5));  // the transfer itself is not slowed
}

TEST_CASE("An expert dispatch and a combine of the same bytes move at their own measured rates", "[engine]") {
  // Two ranks on one NVLink domain, 2 experts (one a rank), top 1: a rank's
  // tokens go to the peer's expert with P = 1/2, so S = 2 MB puts 1 MB on
  // NVLink. The library's table measures 0.8 GB/s dispatch and 0.4 GB/s
  // combine at 2 ranks, counting the rank's own tokens: 1/2 of that crosses
  // NVLink, 0.4 and 0.2 GB/s, below the links' 1 GB/s. The dispatch takes
  // 2.5 ms, the combine after it 5 ms; one plan for both (they have the
  // same collective and bytes) would give them one time.
  auto hw = test::toy_hardware(8);
  hw.gpu.sm_count = 100;
  hw.nvlink.deepep = hardware::ExpertExchangeTable{20, {2}, {0.8e9}, {0.4e9}};
  const hardware::Cluster cluster(hw, 2);
  const cost::CostModel cost(cluster);
  std::vector<taskgraph::TaskGraph> programs(2);
  for (auto& p : programs) {
    Task dispatch = comm(TaskKind::Collective, CollectiveKind::ExpertDispatch, 2);
    dispatch.shape = {1, 2, static_cast<std::uint32_t>(taskgraph::ExchangeLibrary::DeepEP), 0};
    Task combine = dispatch;
    combine.shape[3] = 1;
    const auto first = p.add_task(dispatch);
    p.add_dependency(first, p.add_task(combine));
  }
  const auto w = make_workload(programs, {{0, {0, 1}}});
  const auto r = engine::Simulator(w, cost).run({{}, {0}, 1, {}});
  REQUIRE(r.timeline.size() == 2);
  CHECK(ms(r.timeline[0].end - r.timeline[0].start) == Approx(2.5));
  CHECK(ms(r.timeline[1].end - r.timeline[1].start) == Approx(5.0));
}

TEST_CASE("Kernels beside an expert exchange lose the SMs its kernels hold", "[engine]") {
  // The exchange of the test above, a 2.5 ms dispatch, on a GPU of 100 SMs,
  // beside a 10 ms kernel on rank 0. Its kernels hold S SMs: the kernel runs
  // on the other 100 − S, at (100 − S)/100 of its speed while the exchange
  // runs, then at full speed. DeepEP's default S is 20: 2 ms of the kernel's
  // work done by 2.5 ms, 8 ms left, the end at 10.5 ms; with S = 50, 1.25 ms
  // done, the end at 11.25 ms. The profile's NCCL figure (0.5 here, which
  // would end it at 10 + 2.5/3 ms) is not the exchange's.
  auto hw = test::toy_hardware(8);
  hw.gpu.sm_count = 100;
  hw.gpu.comm_compute_slowdown = 0.5;
  hw.nvlink.deepep = hardware::ExpertExchangeTable{20, {2}, {0.8e9}, {0.4e9}};
  const hardware::Cluster cluster(hw, 2);
  const cost::CostModel cost(cluster);
  const auto kernel_end_ms = [&](std::uint32_t sms) {
    std::vector<taskgraph::TaskGraph> programs(2);
    programs[0].add_task(kernel(10));
    for (auto& p : programs) {
      Task dispatch = comm(TaskKind::Collective, CollectiveKind::ExpertDispatch, 2);
      dispatch.shape = taskgraph::expert_exchange_shape({1, 2, taskgraph::ExchangeLibrary::DeepEP, false, sms});
      p.add_task(dispatch);
    }
    const auto r = engine::Simulator(make_workload(programs, {{0, {0, 1}}}), cost).run({{}, {0}, 1, {}});
    REQUIRE(r.timeline.size() == 2);  // in order of their ends: the exchange (task 1), then the kernel (task 0)
    REQUIRE(r.timeline[0].task == 1);
    CHECK(ms(r.timeline[0].end - r.timeline[0].start) == Approx(2.5));  // the exchange itself is not slowed
    return ms(r.timeline[1].end);
  };
  CHECK(kernel_end_ms(0) == Approx(10.5));
  CHECK(kernel_end_ms(20) == Approx(10.5));
  CHECK(kernel_end_ms(50) == Approx(11.25));
  // An exchange that would hold every SM is refused, naming the setting.
  CHECK_THROWS_WITH(kernel_end_ms(100), Catch::Contains("moe_flex_dispatcher_num_sms") &&
                                            Catch::Contains("leaving no SM to the kernels beside them"));
}

TEST_CASE("A straggler's kernels take longer and its peers wait at the collective", "[engine]") {
  // Both ranks compute 1 ms then all-reduce 2 MB (2·1/2·2 ms = 2 ms); rank 1 is
  // three times slower: the all-reduce starts at 3 ms for both, ends at 5 ms.
  std::vector<taskgraph::TaskGraph> programs(2);
  for (auto& p : programs) {
    const auto k = p.add_task(kernel(1));
    const auto c = p.add_task(comm(TaskKind::Collective, CollectiveKind::AllReduce, 2));
    p.add_dependency(k, c);
  }
  const auto r = run(make_workload(programs, {{0, {0, 1}}}), {{}, {}, 1, {{1, 3.0}}});
  CHECK(ms(r.ranks[0].finish) == Approx(5));
  CHECK(ms(r.ranks[1].finish) == Approx(5));
  CHECK(ms(occupied(r.ranks[0], 0)) == Approx(2));  // rank 0 waited 2 ms
}

TEST_CASE("A host slower than its kernels sets the pace: task i starts when the host has issued it", "[engine][host]") {
  // Five 1 ms kernels on one stream, 3 ms of host time each: kernel i
  // (from 0) is issued at 3(i+1) ms and runs to 3(i+1) + 1 ms.
  taskgraph::TaskGraph g;
  for (int i = 0; i < 5; ++i) g.add_task(kernel(1));
  const auto r = run(make_workload({g}, {}), {{}, {0}, 1, {}}, 3);
  CHECK(ms(r.makespan) == Approx(16));
  REQUIRE(r.timeline.size() == 5);
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(ms(r.timeline[i].start) == Approx(3.0 * static_cast<double>(i + 1)));
    // The recorded host issue: 3i to 3(i+1) ms, back to back, in program order.
    CHECK(ms(r.timeline[i].host_start) == Approx(3.0 * static_cast<double>(i)));
    CHECK(ms(r.timeline[i].host_end) == Approx(3.0 * static_cast<double>(i + 1)));
  }
  // The GPU idles 16 − 5 = 11 ms, all of it waiting for the host.
  CHECK(ms(occupied(r.ranks[0], 0)) == Approx(11));
  CHECK(ms(r.ranks[0].host_wait) == Approx(11));
}

TEST_CASE("A host faster than its kernels costs only the first issue", "[engine][host]") {
  // Five 2 ms kernels, 0.5 ms of host each: the first starts at 0.5 ms, the
  // host stays ahead from then on.
  taskgraph::TaskGraph g;
  for (int i = 0; i < 5; ++i) g.add_task(kernel(2));
  const auto r = run(make_workload({g}, {}), {}, 0.5);
  CHECK(ms(r.makespan) == Approx(10.5));
  CHECK(ms(r.ranks[0].host_wait) == Approx(0.5));
  // Without host time, as before.
  CHECK(ms(run(make_workload({g}, {})).makespan) == Approx(10));
}

TEST_CASE("A collective waits for every member's host to issue it", "[engine][host]") {
  // Rank 0 issues K (1 ms) and then the all-reduce; rank 1 issues three 1 ms
  // kernels first. At 2 ms of host per task the all-reduce is issued at 4 ms
  // on rank 0 and at 8 ms on rank 1; it runs 8 ms (2(n−1)/n · 8 MB at 1 GB/s).
  taskgraph::TaskGraph p0, p1;
  const auto k = p0.add_task(kernel(1));
  const auto c0 = p0.add_task(comm(TaskKind::Collective, CollectiveKind::AllReduce, 8));
  p0.add_dependency(k, c0);
  for (int i = 0; i < 3; ++i) p1.add_task(kernel(1));
  p1.add_task(comm(TaskKind::Collective, CollectiveKind::AllReduce, 8));
  const auto r = run(make_workload({p0, p1}, {{0, {0, 1}}}), {}, 2);
  for (const auto& rank : r.ranks) CHECK(ms(rank.finish) == Approx(16));
}

TEST_CASE("After a synchronizing task the host issues nothing until the GPU has finished all it issued",
          "[engine][host]") {
  // Four 2 ms kernels, 0.5 ms of host each. The host issues K1 at 0.5 ms and
  // K2 at 1 ms (K1 runs 0.5–2.5, K2 2.5–4.5). Unsynchronized, K3 and K4 follow
  // back to back: 8.5 ms. After K2 flagged kHostSync the host waits for K2
  // to end at 4.5 ms, issues K3 at 5.0 and K4 at 5.5: K3 runs 5.0–7.0, K4
  // 7.0–9.0. The GPU waited for the host 0.5 ms at the start and 0.5 ms after.
  taskgraph::TaskGraph g;
  for (int i = 0; i < 4; ++i) g.add_task(kernel(2));
  CHECK(ms(run(make_workload({g}, {}), {}, 0.5).makespan) == Approx(8.5));
  taskgraph::TaskGraph synced;
  for (int i = 0; i < 4; ++i) {
    Task k = kernel(2);
    if (i == 1) k.flags = taskgraph::kHostSync;
    synced.add_task(k);
  }
  const auto r = run(make_workload({synced}, {}), {{}, {0}, 1, {}}, 0.5);
  CHECK(ms(r.makespan) == Approx(9.0));
  REQUIRE(r.timeline.size() == 4);
  CHECK(ms(r.timeline[2].start) == Approx(5.0));
  CHECK(ms(r.ranks[0].host_wait) == Approx(1.0));
  // The recorded host issue: K1 0–0.5, K2 0.5–1.0, then, behind the
  // synchronization, K3 4.5–5.0 and K4 5.0–5.5 (one stream: the timeline is
  // in program order).
  const double host[4][2] = {{0, 0.5}, {0.5, 1.0}, {4.5, 5.0}, {5.0, 5.5}};
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(ms(r.timeline[i].host_start) == Approx(host[i][0]));
    CHECK(ms(r.timeline[i].host_end) == Approx(host[i][1]));
  }
  // Without host time nothing is recorded for the host.
  const auto free_host = run(make_workload({synced}, {}), {{}, {0}, 1, {}});
  for (const auto& rec : free_host.timeline) CHECK(rec.host_end == rec.host_start);
}

TEST_CASE("A synchronization waits for the whole device, not for what depends on it", "[engine][host]") {
  // Rank 0: K (1 ms), then a 1 MB send (1 ms at 1 GB/s) after which its host
  // synchronizes, then K2 (1 ms), which needs nothing from the send. Rank 1
  // computes 3 ms before posting the receive. Unsynchronized, K2 runs at
  // 1–2 ms and rank 0 ends with its send at 4 ms; synchronized, K2 waits for
  // the send: 4–5 ms. No host time: the GPU's idle time is the rendezvous,
  // not the host.
  for (const bool sync : {false, true}) {
    INFO((sync ? "synchronized" : "not synchronized"));
    taskgraph::TaskGraph p0, p1;
    const auto k = p0.add_task(kernel(1));
    Task send = comm(TaskKind::Send, CollectiveKind::PointToPoint, 1);
    if (sync) send.flags = taskgraph::kHostSync;
    const auto s = p0.add_task(send);
    p0.add_dependency(k, s);
    p0.add_task(kernel(1));
    const auto a = p1.add_task(kernel(3));
    const auto recv = p1.add_task(comm(TaskKind::Recv, CollectiveKind::PointToPoint, 1));
    p1.add_dependency(a, recv);
    const auto r = run(make_workload({p0, p1}, {{0, {0, 1}}}), {{}, {0, 1}, 1, {}});
    CHECK(ms(r.ranks[0].finish) == Approx(sync ? 5 : 4));
    CHECK(ms(r.ranks[0].host_wait) == Approx(0));
  }
}


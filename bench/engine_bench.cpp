// Google Benchmark suite for the engine's hot paths, each on a synthetic
// workload that isolates it:
//   EventQueue       — hold model: pop the earliest event, push one later, at a
//                      steady queue size (16: the sorted array a symmetric run
//                      keeps; 1 Ki and up: the radix heap of thousands of ranks)
//   StreamDispatch   — ranks each running a chain of kernels on one stream:
//                      finish → successor check → start → schedule, nothing else
//   CollectiveStart  — ranks meeting in all-reduces on NVLink-domain groups:
//                      rendezvous, transfer plan lookup, flows, finish
//   BandwidthSharing — flows joining and leaving links they share, each change
//                      re-solving max-min fair rates over the connected flows
// items_per_second is events (or queue operations, or flow changes) per second.
#include <benchmark/benchmark.h>

#include <filesystem>

#include <random>

#include "internal/flow_network.hpp"
#include "ptsim/config/load_hardware.hpp"
#include "ptsim/cost/cost_model.hpp"
#include "ptsim/engine/event_queue.hpp"
#include "ptsim/engine/simulator.hpp"
#include "ptsim/hardware/cluster.hpp"

using namespace ptsim;

namespace {

const hardware::HardwareProfile& a100() {
  static const hardware::HardwareProfile hw = [] {
    config::InputFiles read;
    return config::load_hardware((std::filesystem::path(PTSIM_SOURCE_DIR) / "hw_profiles/dgx-a100-superpod.json")
                                     .string(),
                                 read);
  }();
  return hw;
}

void BM_EventQueue(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::int64_t> gap(1, 1'000'000);
  engine::EventQueue q;
  for (std::size_t i = 0; i < size; ++i)
    q.push(engine::Event::make(Time::nanoseconds(gap(rng)), static_cast<std::uint32_t>(i), 0, 0));
  for (auto _ : state) {
    const engine::Event e = q.pop();
    q.push(engine::Event::make(e.at + Time::nanoseconds(gap(rng)), e.target(), e.version, e.kind()));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EventQueue)->Arg(16)->Arg(1 << 10)->Arg(1 << 14)->Arg(1 << 18);

// `ranks` ranks sharing one program: a chain of `length` kernels of
// different sizes (so that finishes interleave across ranks), and, every
// `comm_every` kernels, an all-reduce of 64 MiB over the rank's group of
// `group` ranks (0: no communication).
taskgraph::Workload chain_workload(std::int64_t ranks, int length, int comm_every, int group) {
  taskgraph::Workload w;
  w.world_size = ranks;
  w.stream_names = {"compute", "comm"};
  w.stream_dimension = {"", "tp"};
  w.category_names = {"compute", "comm"};
  w.comm_slot_names = {"tp"};
  w.op_names = {"op"};
  taskgraph::TaskGraph g;
  taskgraph::TaskId last = 0;
  for (int i = 0; i < length; ++i) {
    taskgraph::Task t;
    t.compute = taskgraph::ComputeKind::MemoryBound;
    t.bytes = 1'000'000ULL * static_cast<std::uint64_t>(1 + i % 7);
    const auto id = g.add_task(t);
    if (i > 0) g.add_dependency(last, id);
    last = id;
    if (comm_every > 0 && i % comm_every == comm_every - 1) {
      taskgraph::Task c;
      c.kind = taskgraph::TaskKind::Collective;
      c.collective = taskgraph::CollectiveKind::AllReduce;
      c.stream = 1;
      c.category = 1;
      c.bytes = 64ULL << 20;
      const auto cid = g.add_task(c);
      g.add_dependency(last, cid);
      last = cid;
    }
  }
  w.programs.push_back(taskgraph::Program::single(std::move(g)));
  w.program_of_rank.assign(static_cast<std::size_t>(ranks), 0);
  w.program_base_memory_bytes = {0};
  w.communicator_of.assign(static_cast<std::size_t>(ranks), taskgraph::kNoCommunicator);
  if (group > 0)
    for (std::int64_t first = 0; first < ranks; first += group) {
      taskgraph::Communicator c;
      for (std::int64_t r = first; r < first + group; ++r) {
        c.members.push_back(static_cast<Rank>(r));
        w.communicator_of[static_cast<std::size_t>(r)] = static_cast<taskgraph::CommunicatorId>(w.communicators.size());
      }
      w.communicators.push_back(std::move(c));
    }
  return w;
}

void run_workload(benchmark::State& state, const taskgraph::Workload& w) {
  const hardware::Cluster cluster(a100(), w.world_size);
  const cost::CostModel cost(cluster);
  const engine::Simulator sim(w, cost);
  std::uint64_t events = 0;
  for (auto _ : state) {
    const engine::RunResult r = sim.run({});
    events += r.events;
    benchmark::DoNotOptimize(r.makespan);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(events));
}

void BM_StreamDispatch(benchmark::State& state) {
  run_workload(state, chain_workload(state.range(0), 2000, 0, 0));
}
BENCHMARK(BM_StreamDispatch)->Arg(8)->Arg(512)->Unit(benchmark::kMillisecond);

void BM_CollectiveStart(benchmark::State& state) {
  run_workload(state, chain_workload(state.range(0), 2000, 4, 8));
}
BENCHMARK(BM_CollectiveStart)->Arg(8)->Arg(512)->Unit(benchmark::kMillisecond);

// `flows` flows alive over `links` shared links, each crossing two of them;
// each iteration ends the oldest and starts a new one on a random pair.
void BM_BandwidthSharing(benchmark::State& state) {
  const auto flows = static_cast<std::size_t>(state.range(0));
  const auto links = static_cast<std::size_t>(state.range(1));
  engine::internal::FlowNetwork net(std::vector<double>(links, 25e9), std::vector<bool>(links, true));
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::uint32_t> pick(0, static_cast<std::uint32_t>(links - 1));
  std::vector<engine::internal::FlowId> alive;
  Time now;
  auto start = [&] {
    const hardware::LinkId a = pick(rng);
    hardware::LinkId b = pick(rng);
    if (b == a) b = (a + 1) % static_cast<hardware::LinkId>(links);
    const std::array<hardware::LinkId, 2> path{a, b};
    alive.push_back(net.add(now, 1e9, path, 0, 1, 0));
    net.changed().clear();
  };
  for (std::size_t i = 0; i < flows; ++i) start();
  std::size_t oldest = 0;
  for (auto _ : state) {
    now = now + Time::nanoseconds(1000);
    net.remove(alive[oldest], now);
    net.changed().clear();
    alive[oldest] = alive.back();
    alive.pop_back();
    oldest = (oldest + 1) % flows;
    start();
  }
  state.SetItemsProcessed(state.iterations() * 2);
}
BENCHMARK(BM_BandwidthSharing)->Args({16, 64})->Args({256, 64})->Args({256, 1024});

}  // namespace

BENCHMARK_MAIN();

// NCCL-like collective algorithms against their hand-derived α–β forms, and
// the shipped profiles against measured NCCL bus bandwidths.
#include "ptsim/cost/collective_algorithms.hpp"
#include "ptsim/cost/cost_model.hpp"

#include <algorithm>
#include <numeric>

#include "test_support.hpp"

using namespace ptsim;
using cost::Algorithm;
using cost::Protocol;
using taskgraph::CollectiveKind;

namespace {

// 4 nodes of 8 GPUs; NVLink B = 100 GB/s achieved, NIC 10 GB/s achieved;
// Ring/Simple anchors: base 8.4 µs, NVLink step 3.4 µs, network step 14 µs
// (NCCL's own values, so NCCL's table applies unscaled).
hardware::HardwareProfile toy() {
  hardware::HardwareProfile hw;
  hw.gpus_per_node = 8;
  hw.collective_base_latency_s = 8.4e-6;
  hw.nvlink = {8, 100e9, 3.4e-6, 1.0, std::nullopt};
  hw.nic = {1, 10e9, 14e-6, 1.0};
  hw.fabric.leaf_nodes = 4;
  return hw;
}

std::vector<Rank> ranks(Rank first, Rank count, Rank stride = 1) {
  std::vector<Rank> r;
  for (Rank i = 0; i < count; ++i) r.push_back(first + i * stride);
  return r;
}

const cost::TransferPlan& find(const std::vector<cost::TransferPlan>& plans, Algorithm a, Protocol p) {
  for (const auto& plan : plans)
    if (plan.algorithm == a && plan.protocol == p) return plan;
  FAIL("no such candidate");
  return plans.front();
}

double busbw_all_reduce(double bytes, double n, double seconds) { return bytes / seconds * 2 * (n - 1) / n; }

}  // namespace

TEST_CASE("Ring all-reduce inside a node: 2(n−1)·α + 2(n−1)/n·S/B", "[cost]") {
  const auto hw = toy();
  const hardware::Cluster c(hw, 32);
  const cost::LatencyModel lat(hw);
  const double S = 1e9, B = 100e9, a = 3.4e-6, base = 8.4e-6;
  for (const Rank n : {2, 4, 8}) {
    const auto plans = cost::candidate_plans(CollectiveKind::AllReduce, 1'000'000'000, ranks(0, n), c, lat);
    const double nn = n;
    CHECK(find(plans, Algorithm::Ring, Protocol::Simple).estimated_s ==
          Approx(base + 2 * (nn - 1) * a + 2 * (nn - 1) / nn * S / B));
  }
  // All-gather and reduce-scatter: (n−1)·α + (n−1)/n·S/B.
  const auto ag = cost::candidate_plans(CollectiveKind::AllGather, 1'000'000'000, ranks(0, 8), c, lat);
  CHECK(find(ag, Algorithm::Ring, Protocol::Simple).estimated_s == Approx(base + 7 * a + 7.0 / 8 * S / B));
}

TEST_CASE("Ring across nodes: each rank's NIC carries V/k, NVLink V·(k−1)/k", "[cost]") {
  // 32 ranks on 4 nodes of k = 8: V = 2·31/32·S. NIC: V/8 / 10 GB/s; NVLink:
  // V·7/8 / 100 GB/s; the NICs bind. NCCL's latency: 2(n−1) = 62 steps, of
  // which 2(D−1) = 6 cross the network; a multi-node Simple all-reduce's
  // latency counts 1.4 times (docs/nccl-model-constants.md §4–5).
  const auto hw = toy();
  const hardware::Cluster c(hw, 32);
  const cost::LatencyModel lat(hw);
  const double S = 1e9, V = 2 * 31.0 / 32 * S;
  const auto plans = cost::candidate_plans(CollectiveKind::AllReduce, 1'000'000'000, ranks(0, 32), c, lat);
  CHECK(find(plans, Algorithm::Ring, Protocol::Simple).estimated_s ==
        Approx(1.4 * (8.4e-6 + 56 * 3.4e-6 + 6 * 14e-6) + V / 8 / 10e9));
}

TEST_CASE("Hierarchical all-reduce: intra reduce-scatter, inter all-reduce, intra all-gather", "[cost]") {
  // D = 4 nodes, k = 8: (k−1)/k·S/B_nvl + 2(D−1)/D·S/(k·B_nic) + (k−1)/k·S/B_nvl,
  // latencies base + (k−1)α_nvl, 2(D−1)α_net, (k−1)α_nvl.
  const auto hw = toy();
  const hardware::Cluster c(hw, 32);
  const cost::LatencyModel lat(hw);
  const double S = 1e9;
  const auto plans = cost::candidate_plans(CollectiveKind::AllReduce, 1'000'000'000, ranks(0, 32), c, lat);
  const double expected = 8.4e-6 + 7 * 3.4e-6 + 7.0 / 8 * S / 100e9 +  //
                          2 * 3 * 14e-6 + 2 * 3.0 / 4 * S / (8 * 10e9) +  //
                          7 * 3.4e-6 + 7.0 / 8 * S / 100e9;
  CHECK(find(plans, Algorithm::Hierarchical, Protocol::Simple).estimated_s == Approx(expected));
}

TEST_CASE("Tree all-reduce: log-depth latency, 2S/k per NIC", "[cost]") {
  // 16 nodes, one rank each (k = 1): 2·⌊log2 16⌋ = 8 network steps of the
  // tree's Simple latency (NCCL: 14 µs), base 8.4 µs; 2S through each NIC at
  // NCCL's tree efficiency of 0.92.
  const auto hw = toy();
  const hardware::Cluster c(hw, 128);
  const cost::LatencyModel lat(hw);
  const auto plans = cost::candidate_plans(CollectiveKind::AllReduce, 1'000'000, ranks(0, 16, 8), c, lat);
  const auto& tree = find(plans, Algorithm::Tree, Protocol::Simple);
  CHECK(tree.estimated_s == Approx(lat.base(Algorithm::Tree, Protocol::Simple) +
                                   8 * lat.step(false, Algorithm::Tree, Protocol::Simple) + 2e6 / (0.92 * 10e9)));
  // The ring needs 2·15 network steps: for small messages the tree wins.
  const auto best = cost::choose_plan(CollectiveKind::AllReduce, 64 * 1024, ranks(0, 16, 8), c, lat);
  CHECK(best.algorithm == Algorithm::Tree);
}

TEST_CASE("CollNet only where the fabric offers SHARP and NCCL_COLLNET_ENABLE is on", "[cost]") {
  // NCCL's tuner leaves CollNet out unless NCCL_COLLNET_ENABLE=1 (default 0,
  // docs/userguide env.rst), whatever the switches can do.
  auto hw = toy();
  const double S = 1e9;
  const auto has_collnet = [&](const hardware::HardwareProfile& p) {
    const hardware::Cluster c(p, 32);
    const auto plans = cost::candidate_plans(CollectiveKind::AllReduce, 1'000'000'000, ranks(0, 32), c,
                                             cost::LatencyModel(p));
    return std::any_of(plans.begin(), plans.end(), [](const auto& x) { return x.algorithm == Algorithm::CollNet; });
  };
  CHECK_FALSE(has_collnet(hw));
  hw.fabric.in_network_reduction = true;
  CHECK_FALSE(has_collnet(hw));  // SHARP switches, NCCL's default
  hw.fabric.nccl_collnet_enable = true;
  REQUIRE(has_collnet(hw));
  // Then: reduce-scatter inside each node, S/k per rank up and back through
  // its own NIC, all-gather inside; NCCL's CollNetDirect latency
  // 2·(min(1, k−1)·3.7 + (k−1)·0.4) + 31 µs at NCCL's unscaled table.
  const hardware::Cluster c(hw, 32);
  const auto plans = cost::candidate_plans(CollectiveKind::AllReduce, 1'000'000'000, ranks(0, 32), c,
                                           cost::LatencyModel(hw));
  const double expected = 2 * (7.0 / 8 * S / 100e9) + S / 8 / 10e9 + (2 * (3.7 + 7 * 0.4) + 31) * 1e-6;
  CHECK(find(plans, Algorithm::CollNet, Protocol::Simple).estimated_s == Approx(expected));
}

TEST_CASE("Profiles reproduce NCCL's measured bus bandwidths at 1 GiB", "[cost]") {
  // shared/validation/hardware_reference.md §6.3: all-reduce bus bandwidth on
  // 8 GPUs ≈ 230 GB/s on A100 and ≈ 370 GB/s (ring) / ≈ 480 GB/s (NVLS) on
  // H100; 46–48 GB/s per NDR NIC across nodes.
  const std::uint64_t GiB = 1ull << 30;
  {
    const auto hw = test::shipped_hardware("a100-sxm4-80gb");
    const hardware::Cluster c(hw, 8);
    const auto plan = cost::choose_plan(CollectiveKind::AllReduce, GiB, ranks(0, 8), c, cost::LatencyModel(hw));
    CHECK(busbw_all_reduce(GiB, 8, plan.estimated_s) == Approx(230e9).epsilon(0.02));
  }
  {
    const auto hw = test::shipped_hardware("h100-sxm5-80gb");
    const hardware::Cluster c(hw, 8);
    const cost::LatencyModel lat(hw);
    const auto plans = cost::candidate_plans(CollectiveKind::AllReduce, GiB, ranks(0, 8), c, lat);
    CHECK(busbw_all_reduce(GiB, 8, find(plans, Algorithm::Ring, Protocol::Simple).estimated_s) ==
          Approx(370e9).epsilon(0.02));
    const auto best = cost::choose_plan(CollectiveKind::AllReduce, GiB, ranks(0, 8), c, lat);
    CHECK(best.algorithm == Algorithm::Nvls);
    CHECK(busbw_all_reduce(GiB, 8, best.estimated_s) == Approx(480e9).epsilon(0.03));
  }
  {
    // One GPU per node on 16 nodes: the ring runs over one NDR NIC per rank.
    const auto hw = test::shipped_hardware("h100-sxm5-80gb");
    const hardware::Cluster c(hw, 128);
    const auto plan = cost::choose_plan(CollectiveKind::AllReduce, GiB, ranks(0, 16, 8), c, cost::LatencyModel(hw));
    const double busbw = busbw_all_reduce(GiB, 16, plan.estimated_s);
    CHECK(busbw >= 46e9 * 0.98);
    CHECK(busbw <= 48e9 * 1.02);
  }
}

TEST_CASE("A collective over a tensor list adds one copy kernel per member", "[cost]") {
  // PyTorch copies every member's piece between the list and NCCL's flat
  // buffer: n kernels, each the launch overhead plus its piece read and
  // written at the profile's memory rate.
  auto hw = toy();
  hw.gpu.memory_bandwidth_bytes_per_s = 2000e9;
  hw.gpu.memory_efficiency = 0.8;
  hw.gpu.kernel_launch_overhead_s = 2.5e-6;
  const hardware::Cluster c(hw, 32);
  const cost::CostModel model(c);
  taskgraph::Communicator group{ranks(0, 32)};
  const double S = 64e6;
  for (const auto kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
    taskgraph::Task t;
    t.kind = taskgraph::TaskKind::Collective;
    t.collective = kind;
    t.bytes = static_cast<std::uint64_t>(S);
    const auto plain = model.communication_plan(t, group);
    t.flags = taskgraph::kTensorList;
    const auto listed = model.communication_plan(t, group);
    const double copies = 32 * (2.5e-6 + 2 * S / 32 / (2000e9 * 0.8));
    CHECK(cost::plan_seconds(listed, c) - cost::plan_seconds(plain, c) == Approx(copies).epsilon(1e-6));
    CHECK(listed.estimated_s - plain.estimated_s == Approx(copies).epsilon(1e-9));
    // After the gather's transfer, before the reduce-scatter's.
    REQUIRE(listed.phases.size() == plain.phases.size() + 1);
    const auto& copy_phase = kind == CollectiveKind::AllGather ? listed.phases.back() : listed.phases.front();
    CHECK(copy_phase.flows.empty());
  }
  // An all-reduce has no list form: nothing added.
  taskgraph::Task ar;
  ar.kind = taskgraph::TaskKind::Collective;
  ar.collective = CollectiveKind::AllReduce;
  ar.bytes = static_cast<std::uint64_t>(S);
  const double plain_ar = cost::plan_seconds(model.communication_plan(ar, group), c);
  ar.flags = taskgraph::kTensorList;
  CHECK(cost::plan_seconds(model.communication_plan(ar, group), c) == plain_ar);
}

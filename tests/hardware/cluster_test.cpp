// Rank placement, links and paths.
#include "ptsim/hardware/cluster.hpp"

#include "test_support.hpp"

using namespace ptsim;
using hardware::LinkKind;

namespace {
hardware::HardwareProfile dgx_pods() {
  hardware::HardwareProfile hw;
  hw.gpus_per_node = 8;
  hw.nvlink = {8, 450e9, 0, 0.8, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
  hw.nic = {1, 50e9, 0, 0.9, std::nullopt};
  hw.fabric.levels = 3;
  hw.fabric.leaf_nodes = 2;
  hw.fabric.pod_gpus = 32;
  hw.fabric.oversubscription = 4;
  return hw;
}
}  // namespace

TEST_CASE("Ranks fill nodes, NVLink domains and pods in order", "[hardware]") {
  const auto hw = dgx_pods();
  const hardware::Cluster c(hw, 64);
  CHECK(c.num_nodes() == 8);
  CHECK(c.num_pods() == 2);
  CHECK(c.node_of(15) == 1);
  CHECK(c.domain_of(15) == 1);
  CHECK(c.rail_of(15) == 7);
  CHECK(c.pod_of(31) == 0);
  CHECK(c.pod_of(32) == 1);
  // 4 links per GPU, then an uplink and a downlink per pod.
  CHECK(c.num_links() == 64 * 4 + 2 * 2);
  CHECK(c.capacity(c.gpu_link(3, LinkKind::NvlinkOut)) == Approx(450e9 * 0.8));
  CHECK(c.capacity(c.gpu_link(3, LinkKind::NicIn)) == Approx(50e9 * 0.9));
  // A pod's uplink: 32 GPUs · 45 GB/s / 4.
  CHECK(c.capacity(c.pod_uplink(1)) == Approx(32 * 45e9 / 4));
  CHECK(c.link_name(c.pod_downlink(1)) == "pod 1 downlink");
}

TEST_CASE("Paths cross NVLink inside a domain, NICs and pod links outside", "[hardware]") {
  const auto hw = dgx_pods();
  const hardware::Cluster c(hw, 64);
  const auto nvlink = c.path(1, 6);
  CHECK(nvlink.over_nvlink);
  CHECK(std::vector<hardware::LinkId>(nvlink.view().begin(), nvlink.view().end()) ==
        std::vector<hardware::LinkId>{c.gpu_link(1, LinkKind::NvlinkOut), c.gpu_link(6, LinkKind::NvlinkIn)});
  // Same leaf group (nodes 0 and 1), same rail: one switch.
  const auto leaf = c.path(3, 11);
  CHECK_FALSE(leaf.over_nvlink);
  CHECK(leaf.num_links == 2);
  CHECK(leaf.switches == 1);
  // Other rail under rail-optimized leaves: leaf, spine, leaf.
  CHECK(c.path(3, 12).switches == 3);
  // Nodes 0 and 2 are under different leaf groups of the same pod.
  CHECK(c.path(3, 19).switches == 3);
  // Across pods: up through the core and down.
  const auto cross = c.path(3, 35);
  CHECK(cross.num_links == 4);
  CHECK(cross.links[1] == c.pod_uplink(0));
  CHECK(cross.links[2] == c.pod_downlink(1));
  CHECK(cross.switches == 5);
}

TEST_CASE("A degraded link loses capacity", "[hardware]") {
  const auto hw = dgx_pods();
  hardware::Cluster c(hw, 64);
  c.slow_down({c.gpu_link(5, LinkKind::NicOut), 4.0});
  CHECK(c.capacity(c.gpu_link(5, LinkKind::NicOut)) == Approx(50e9 * 0.9 / 4));
}

TEST_CASE("A job takes the same nodes from each multi-node NVLink domain, as Megatron-Bridge's segment", "[hardware]") {
  // GB200 NVL72: 18 trays of 4 GPUs a rack. Megatron-Bridge's launcher asks
  // Slurm for --segment = the largest divisor of the job's nodes up to 18.
  const auto nvl72 = test::shipped_hardware("gb200-nvl72");
  CHECK(hardware::Cluster(nvl72, 72).job_domain_gpus() == 72);    // 18 nodes: one rack
  CHECK(hardware::Cluster(nvl72, 64).job_domain_gpus() == 72);    // 16 nodes fit one rack
  CHECK(hardware::Cluster(nvl72, 256).job_domain_gpus() == 64);   // 64 nodes: 4 racks of 16
  CHECK(hardware::Cluster(nvl72, 80).job_domain_gpus() == 40);    // 20 nodes: 2 racks of 10
  CHECK(hardware::Cluster(nvl72, 1440).job_domain_gpus() == 72);  // 360 nodes: 20 full racks
  // So at 256 GPUs an expert-parallel group of 64 consecutive ranks stays
  // on NVLink, and ranks 63 and 64 sit in different racks.
  const hardware::Cluster c(nvl72, 256);
  CHECK(c.path(64, 127).over_nvlink);
  CHECK_FALSE(c.path(63, 64).over_nvlink);
  // Single-node domains are the node, whatever the job.
  const auto h100 = test::shipped_hardware("h100-sxm5-80gb");
  CHECK(hardware::Cluster(h100, 1024).job_domain_gpus() == 8);
}

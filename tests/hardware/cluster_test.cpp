// Rank placement and the tier a group spans.
#include "ptsim/hardware/cluster.hpp"

#include <vector>

#include "test_support.hpp"

using namespace ptsim;

TEST_CASE("A group spans NVLink inside a node and InfiniBand across nodes", "[hardware]") {
  const auto hw = test::shipped_hardware("a100-sxm4-80gb");
  const hardware::Cluster cluster(hw, 64);
  CHECK(cluster.num_nodes() == 8);
  CHECK(cluster.node_of(15) == 1);
  CHECK(cluster.tier_spanned(std::vector<Rank>{0, 1, 2, 7}) == 0);   // node 0 only
  CHECK(cluster.tier_spanned(std::vector<Rank>{8, 15}) == 0);        // node 1 only
  CHECK(cluster.tier_spanned(std::vector<Rank>{7, 8}) == 1);         // nodes 0 and 1
  CHECK(cluster.tier_spanned(std::vector<Rank>{0, 8, 16, 24}) == 1);  // a DP group over nodes
  CHECK(cluster.tier_spanned(std::vector<Rank>{5}) == 0);
}

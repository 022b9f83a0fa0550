// Megatron-LM's rank-group arithmetic.
#include "ptsim/strategy/rank_layout.hpp"

#include "ptsim/common/error.hpp"
#include "test_support.hpp"

using namespace ptsim;
using strategy::Axis;
using Groups = std::vector<std::vector<Rank>>;

TEST_CASE("Megatron's docstring example: order tp-pp-dp, sizes 2-2-2", "[strategy]") {
  // megatron/core/parallel_state.py, generate_masked_orthogonal_rank_groups:
  // with tp=2, pp=2, dp=2 in order tp-pp-dp the DP groups are
  // [[0,4],[1,5],[2,6],[3,7]], the TP groups [[0,1],[2,3],[4,5],[6,7]] and
  // the PP groups [[0,2],[1,3],[4,6],[5,7]].
  const strategy::RankLayout layout(2, 2, 2, "tp-pp-dp");
  CHECK(layout.all_groups(Axis::Dp) == Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(layout.all_groups(Axis::Tp) == Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(layout.all_groups(Axis::Pp) == Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
}

TEST_CASE("Default order tp-cp-ep-dp-pp: TP consecutive, stages outermost", "[strategy]") {
  // 16 ranks, tp=2, dp=2, pp=4: rank = tp + 2·dp + 4·pp.
  const strategy::RankLayout layout(2, 2, 4);
  CHECK(layout.world_size() == 16);
  CHECK(layout.coordinate(13, Axis::Tp) == 1);
  CHECK(layout.coordinate(13, Axis::Dp) == 0);
  CHECK(layout.coordinate(13, Axis::Pp) == 3);
  CHECK(layout.group(13, Axis::Pp) == std::vector<Rank>{1, 5, 9, 13});
  CHECK(layout.group(6, Axis::Dp) == std::vector<Rank>{4, 6});
  CHECK(layout.with_coordinate(13, Axis::Pp, 0) == 1);
}

TEST_CASE("A rank order must name each axis once", "[strategy]") {
  CHECK_THROWS_WITH(strategy::RankLayout(2, 2, 2, "tp-tp-dp"), Catch::Contains("appears twice"));
  CHECK_THROWS_WITH(strategy::RankLayout(2, 2, 2, "tp-xx-pp"), Catch::Contains("unknown axis 'xx'"));
  CHECK_THROWS_WITH(strategy::RankLayout(2, 2, 2, "tp-dp"), Catch::Contains("leaves out pp"));
  CHECK_NOTHROW(strategy::RankLayout(2, 2, 2, "tp-cp-ep-dp-pp"));
  // Megatron's order "tp-pp-dp" puts pipeline neighbours next to each other.
  CHECK(strategy::RankLayout(2, 2, 2, "tp-pp-dp").group(0, Axis::Pp) == std::vector<Rank>{0, 2});
}

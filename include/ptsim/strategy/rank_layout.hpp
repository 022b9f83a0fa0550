// RankLayout: rank ↔ (tp, cp, ep, dp, pp) coordinates and the groups along
// each axis, as Megatron-LM's RankGenerator lays them out: the first axis of
// the order varies fastest. Default order Megatron's "tp-cp-ep-dp-pp": TP
// groups are consecutive ranks (inside a node), pipeline stages outermost.
// Dense layers use (tp, cp, ep = 1, dp, pp); MoE layers lay the same ranks out
// as (expert_tp, cp = 1, ep, expert_dp, pp) with the same order, as
// Megatron-Core's expert rank generator does.
//
// Worked example (Megatron's docstring), order tp-pp-dp, tp=2 pp=2 dp=2:
//   rank = tp + 2·pp + 4·dp
//   TP groups [0,1] [2,3] [4,5] [6,7]; PP groups [0,2] [1,3] [4,6] [5,7];
//   DP groups [0,4] [1,5] [2,6] [3,7].
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "ptsim/common/ids.hpp"

namespace ptsim::strategy {

enum class Axis : std::uint8_t { Tp = 0, Cp = 1, Ep = 2, Dp = 3, Pp = 4 };
inline constexpr int kNumAxes = 5;
inline constexpr const char* kDefaultRankOrder = "tp-cp-ep-dp-pp";

std::string_view to_string(Axis a);

class RankLayout {
 public:
  /// order: axis names joined by '-', first = innermost, e.g. "tp-dp-pp".
  /// It names tp, dp and pp once each, and cp and ep at most once (axes it
  /// leaves out come last). Throws ConfigError otherwise.
  RankLayout(std::int64_t tp, std::int64_t dp, std::int64_t pp,
             std::string_view order = kDefaultRankOrder)
      : RankLayout(tp, 1, 1, dp, pp, order) {}
  RankLayout(std::int64_t tp, std::int64_t cp, std::int64_t ep, std::int64_t dp, std::int64_t pp,
             std::string_view order);

  std::int64_t world_size() const { return world_size_; }
  std::int64_t size(Axis a) const { return size_[index(a)]; }
  const std::string& order() const { return order_text_; }

  /// Coordinate of rank along an axis.
  std::int64_t coordinate(Rank rank, Axis a) const {
    return (rank / stride_[index(a)]) % size_[index(a)];
  }
  /// The rank whose coordinates are those of `rank` except along `a`, where it is `value`.
  Rank with_coordinate(Rank rank, Axis a, std::int64_t value) const;
  /// Members of rank's group along an axis, in coordinate order.
  std::vector<Rank> group(Rank rank, Axis a) const;
  /// Members of rank's group along several axes (e.g. a data-parallel group
  /// spanning CP and DP), in rank order.
  std::vector<Rank> group(Rank rank, std::initializer_list<Axis> axes) const;
  /// Every group along an axis, each in coordinate order, groups sorted by first member.
  std::vector<std::vector<Rank>> all_groups(Axis a) const;

 private:
  static constexpr std::size_t index(Axis a) { return static_cast<std::size_t>(a); }
  std::array<std::int64_t, kNumAxes> size_{};
  std::array<std::int64_t, kNumAxes> stride_{};
  std::int64_t world_size_ = 1;
  std::string order_text_;
};

}  // namespace ptsim::strategy

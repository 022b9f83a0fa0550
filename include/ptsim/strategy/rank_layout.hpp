// RankLayout: rank ↔ (tp, dp, pp) coordinates and the groups along each axis,
// as Megatron-LM's RankGenerator lays them out: the first axis of the order
// varies fastest. Default order "tp-dp-pp": TP groups are consecutive ranks.
//
// Worked example (Megatron's docstring), order tp-pp-dp, tp=2 pp=2 dp=2:
//   rank = tp + 2·pp + 4·dp
//   TP groups [0,1] [2,3] [4,5] [6,7]; PP groups [0,2] [1,3] [4,6] [5,7];
//   DP groups [0,4] [1,5] [2,6] [3,7].
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ptsim/common/ids.hpp"

namespace ptsim::strategy {

enum class Axis : std::uint8_t { Tp = 0, Dp = 1, Pp = 2 };
inline constexpr int kNumAxes = 3;

std::string_view to_string(Axis a);

class RankLayout {
 public:
  /// order: axis names joined by '-', first = innermost, e.g. "tp-dp-pp".
  /// Throws ConfigError when the order is not a permutation of tp, dp, pp.
  RankLayout(std::int64_t tp, std::int64_t dp, std::int64_t pp, std::string_view order = "tp-dp-pp");

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

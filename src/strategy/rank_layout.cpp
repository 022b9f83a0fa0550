// Megatron-style rank ↔ coordinate arithmetic (see rank_layout.hpp).
#include "ptsim/strategy/rank_layout.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "ptsim/common/error.hpp"

namespace ptsim::strategy {

std::string_view to_string(Axis a) {
  switch (a) {
    case Axis::Tp: return "tp";
    case Axis::Cp: return "cp";
    case Axis::Ep: return "ep";
    case Axis::Dp: return "dp";
    case Axis::Pp: return "pp";
  }
  return "?";
}

RankLayout::RankLayout(std::int64_t tp, std::int64_t cp, std::int64_t ep, std::int64_t dp, std::int64_t pp,
                       std::string_view order)
    : order_text_(order) {
  size_ = {tp, cp, ep, dp, pp};
  std::array<bool, kNumAxes> seen{};
  std::int64_t stride = 1;
  std::size_t begin = 0;
  int count = 0;
  while (begin <= order.size()) {
    const std::size_t end = std::min(order.find('-', begin), order.size());
    const std::string_view name = order.substr(begin, end - begin);
    bool known = false;
    for (int i = 0; i < kNumAxes; ++i) {
      if (to_string(static_cast<Axis>(i)) != name) continue;
      if (seen[i])
        throw ConfigError(fmt::format("rank order '{}': axis '{}' appears twice; name each of "
                                      "tp, dp, pp once, e.g. {}",
                                      order, name, kDefaultRankOrder));
      seen[i] = known = true;
      stride_[i] = stride;
      stride *= size_[i];
    }
    if (!known)
      throw ConfigError(fmt::format("rank order '{}': unknown axis '{}'; use tp, cp, ep, dp and "
                                    "pp joined by '-', e.g. {}",
                                    order, name, kDefaultRankOrder));
    ++count;
    begin = end + 1;
  }
  for (const Axis required : {Axis::Tp, Axis::Dp, Axis::Pp})
    if (!seen[index(required)])
      throw ConfigError(fmt::format("rank order '{}' names {} axes and leaves out {}; it must name "
                                    "each of tp, dp, pp once, e.g. {}",
                                    order, count, to_string(required), kDefaultRankOrder));
  // Axes left out of the order go last.
  for (int i = 0; i < kNumAxes; ++i)
    if (!seen[static_cast<std::size_t>(i)]) {
      stride_[static_cast<std::size_t>(i)] = stride;
      stride *= size_[static_cast<std::size_t>(i)];
    }
  world_size_ = stride;
}

Rank RankLayout::with_coordinate(Rank rank, Axis a, std::int64_t value) const {
  const std::int64_t current = coordinate(rank, a);
  return static_cast<Rank>(rank + (value - current) * stride_[index(a)]);
}

std::vector<Rank> RankLayout::group(Rank rank, Axis a) const {
  std::vector<Rank> members;
  members.reserve(static_cast<std::size_t>(size(a)));
  for (std::int64_t c = 0; c < size(a); ++c) members.push_back(with_coordinate(rank, a, c));
  return members;
}

std::vector<Rank> RankLayout::group(Rank rank, std::initializer_list<Axis> axes) const {
  std::vector<Rank> members{rank};
  for (const Axis a : axes) {
    std::vector<Rank> next;
    for (const Rank m : members)
      for (const Rank r : group(m, a)) next.push_back(r);
    members = std::move(next);
  }
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  return members;
}

std::vector<std::vector<Rank>> RankLayout::all_groups(Axis a) const {
  std::vector<std::vector<Rank>> groups;
  for (Rank r = 0; r < world_size_; ++r)
    if (coordinate(r, a) == 0) groups.push_back(group(r, a));
  return groups;
}

}  // namespace ptsim::strategy

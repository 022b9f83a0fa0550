// Even split of layers over pipeline stages (see stage_partition.hpp).
#include "ptsim/strategy/stage_partition.hpp"

#include "ptsim/common/error.hpp"

namespace ptsim::strategy {

std::vector<LayerRange> make_stage_partition(std::int64_t num_layers, std::int64_t num_stages) {
  PTSIM_ASSERT(num_stages >= 1 && num_stages <= num_layers, "1 <= stages <= layers");
  const auto stages = static_cast<std::size_t>(num_stages);
  std::vector<std::int64_t> counts(stages, num_layers / num_stages);
  std::int64_t extra = num_layers % num_stages;
  // Preference order for extra layers: inner stages 1..p-2, then 0, then p-1.
  std::vector<std::size_t> order;
  for (std::size_t s = 1; s + 1 < stages; ++s) order.push_back(s);
  order.push_back(0);
  if (stages > 1) order.push_back(stages - 1);
  for (std::size_t i = 0; extra > 0; ++i, --extra) ++counts[order[i]];

  std::vector<LayerRange> ranges(stages);
  std::int64_t first = 0;
  for (std::size_t s = 0; s < stages; ++s) {
    ranges[s] = {first, counts[s]};
    first += counts[s];
  }
  return ranges;
}

}  // namespace ptsim::strategy

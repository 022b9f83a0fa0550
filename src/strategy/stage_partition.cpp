// Splits of layers over pipeline stages and model chunks (see stage_partition.hpp).
#include "ptsim/strategy/stage_partition.hpp"

#include "ptsim/common/error.hpp"
#include "ptsim/strategy/pipeline_schedule.hpp"
#include "ptsim/strategy/schedule.hpp"

namespace ptsim::strategy {

namespace {

// Even split of `layers` over `stages`, extras to the inner stages first.
std::vector<std::int64_t> even(std::int64_t layers, std::int64_t stages, bool inner_first) {
  const auto n = static_cast<std::size_t>(stages);
  std::vector<std::int64_t> counts(n, layers / stages);
  std::int64_t extra = layers % stages;
  std::vector<std::size_t> order;
  if (inner_first) {
    for (std::size_t s = 1; s + 1 < n; ++s) order.push_back(s);
    order.push_back(0);
    if (n > 1) order.push_back(n - 1);
  } else {
    for (std::size_t s = 0; s < n; ++s) order.push_back(s);
  }
  for (std::size_t i = 0; extra > 0; ++i, --extra) ++counts[order[i]];
  return counts;
}

}  // namespace

std::vector<std::int64_t> split_layers(std::int64_t num_layers, std::int64_t num_stages,
                                       std::optional<std::int64_t> first, std::optional<std::int64_t> last) {
  PTSIM_ASSERT(num_stages >= 1, "at least one stage");
  if (!first && !last) {
    PTSIM_ASSERT(num_stages <= num_layers, "every stage needs a layer");
    return even(num_layers, num_stages, true);
  }
  PTSIM_ASSERT(num_stages >= 2, "first/last stage layers need two stages");
  const std::int64_t fixed = (first ? 1 : 0) + (last ? 1 : 0);
  const std::int64_t rest_stages = num_stages - fixed;
  const std::int64_t rest_layers = num_layers - first.value_or(0) - last.value_or(0);
  PTSIM_ASSERT(rest_layers >= rest_stages && (rest_stages > 0 || rest_layers == 0), "every stage needs a layer");
  std::vector<std::int64_t> counts;
  if (first) counts.push_back(*first);
  if (rest_stages > 0)
    for (const std::int64_t c : even(rest_layers, rest_stages, false)) counts.push_back(c);
  if (last) counts.push_back(*last);
  return counts;
}

std::vector<LayerRange> make_ranges(const std::vector<std::int64_t>& counts) {
  std::vector<LayerRange> ranges;
  ranges.reserve(counts.size());
  std::int64_t first = 0;
  for (const std::int64_t c : counts) {
    ranges.push_back({first, c});
    first += c;
  }
  return ranges;
}

std::vector<LayerRange> make_stage_partition(std::int64_t num_layers, std::int64_t num_stages) {
  return make_ranges(split_layers(num_layers, num_stages));
}

std::int64_t chunks_per_stage(const ParallelConfig& config) { return describe(config.schedule).chunks(config.vpp); }

std::vector<LayerRange> stage_chunks(const ParallelConfig& config, std::int64_t stage) {
  const auto virtual_ranges = make_ranges(config.virtual_stage_layers);
  std::vector<LayerRange> chunks;
  for (std::int64_t c = 0; c < chunks_per_stage(config); ++c) {
    const auto v = static_cast<std::size_t>(virtual_stage(config.schedule, stage, config.pp, c));
    PTSIM_ASSERT(v < virtual_ranges.size(), "virtual stage out of range");
    chunks.push_back(virtual_ranges[v]);
  }
  return chunks;
}

}  // namespace ptsim::strategy

// Small integer identifiers shared along the flow.
#pragma once

#include <cstdint>

namespace ptsim {

using Rank = std::int32_t;  // global GPU rank, 0 … world_size-1

}  // namespace ptsim

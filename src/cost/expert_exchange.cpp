// Measured expert-exchange rates (see expert_exchange.hpp).
#include "ptsim/cost/expert_exchange.hpp"

#include "internal/interpolate.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::cost {

double measured_exchange_rate(const hardware::ExpertExchangeTable& table, double ranks, bool combine) {
  PTSIM_ASSERT(!table.ranks.empty(), "an exchange table holds at least one rank count");
  return internal::interpolate(table.ranks, combine ? table.combine_bytes_per_s : table.dispatch_bytes_per_s, ranks);
}

double nvlink_cap_of_exchange(const hardware::ExpertExchangeTable& table, double ranks, bool combine) {
  PTSIM_ASSERT(ranks >= 2, "an exchange over NVLink has at least two members in the domain");
  return measured_exchange_rate(table, ranks, combine) * (ranks - 1) / ranks;
}

}  // namespace ptsim::cost

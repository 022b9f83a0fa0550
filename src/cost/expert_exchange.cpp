// Measured expert-exchange rates (see expert_exchange.hpp).
#include "ptsim/cost/expert_exchange.hpp"

#include <algorithm>

#include "internal/interpolate.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::cost {

namespace {

// A measurement that counts every member's share, the member's own too, as
// a rate for the shares of the other members − 1.
double rate_for_the_others(const hardware::ExpertExchangeTable& table, double members, bool combine) {
  return measured_exchange_rate(table, members, combine) * (members - 1) / members;
}

}  // namespace

double measured_exchange_rate(const hardware::ExpertExchangeTable& table, double members, bool combine) {
  PTSIM_ASSERT(!table.members.empty(), "an exchange table holds at least one member count");
  return internal::interpolate(table.members, combine ? table.combine_bytes_per_s : table.dispatch_bytes_per_s,
                               members);
}

double nvlink_cap_of_exchange(const hardware::ExpertExchangeTable& table, double ranks, bool combine) {
  PTSIM_ASSERT(ranks >= 2, "an exchange over NVLink has at least two members in the domain");
  return rate_for_the_others(table, ranks, combine);
}

double network_cap_of_exchange(const hardware::ExpertExchangeTable& table, double domains, bool combine) {
  PTSIM_ASSERT(domains >= 2, "an exchange across the network spans at least two NVLink domains");
  return rate_for_the_others(table, domains, combine);
}

double default_exchange_sms(taskgraph::ExchangeLibrary library, std::span<const Rank> members,
                            const hardware::Cluster& cluster) {
  if (library == taskgraph::ExchangeLibrary::DeepEP) return 20;
  const bool one_domain = members.empty() || std::all_of(members.begin(), members.end(), [&](Rank r) {
                            return cluster.domain_of(r) == cluster.domain_of(members.front());
                          });
  return one_domain ? 24 : 8;
}

}  // namespace ptsim::cost

// What a measured expert-parallel exchange library moves: the rate a
// profile's table gives for a number of members, as a cap on the bytes
// ptsim's exchange plan sends over NVLink or across the network.
#pragma once

#include "ptsim/hardware/hardware_profile.hpp"

namespace ptsim::cost {

/// The table's algorithm bandwidth (bytes/s) for `members` exchanging (EP
/// ranks of one NVLink domain, or NVLink domains), a dispatch's or a
/// combine's: linear between the measured counts, held at the table's ends.
double measured_exchange_rate(const hardware::ExpertExchangeTable& table, double members, bool combine);

/// The same rate as a cap on one member's NVLink bytes in ptsim's plan. The
/// measurement counts the tokens a rank receives from all `ranks` members,
/// its own included, where the plan's NVLink flows carry those of the other
/// ranks − 1: the cap is the rate times (ranks − 1) / ranks.
double nvlink_cap_of_exchange(const hardware::ExpertExchangeTable& table, double ranks, bool combine);

/// The same across `domains` NVLink domains, as a cap on one rank's network
/// bytes. The measurement counts a token once for each domain holding one of
/// its experts, its own domain included, where the plan's network flow
/// carries the copies for the other domains − 1: the cap is the rate times
/// (domains − 1) / domains.
double network_cap_of_exchange(const hardware::ExpertExchangeTable& table, double domains, bool combine);

}  // namespace ptsim::cost

// What a measured expert-parallel exchange library moves through NVLink: the
// rate a profile's table gives for a number of ranks, as a cap on the bytes
// ptsim's exchange plan sends over NVLink.
#pragma once

#include "ptsim/hardware/hardware_profile.hpp"

namespace ptsim::cost {

/// The table's algorithm bandwidth (bytes/s) for `ranks` members of one
/// NVLink domain exchanging, a dispatch's or a combine's: linear between the
/// measured rank counts, held at the table's ends.
double measured_exchange_rate(const hardware::ExpertExchangeTable& table, double ranks, bool combine);

/// The same rate as a cap on one member's NVLink bytes in ptsim's plan. The
/// measurement counts the tokens a rank receives from all `ranks` members,
/// its own included, where the plan's NVLink flows carry those of the other
/// ranks − 1: the cap is the rate times (ranks − 1) / ranks.
double nvlink_cap_of_exchange(const hardware::ExpertExchangeTable& table, double ranks, bool combine);

}  // namespace ptsim::cost

// What a measured expert-parallel exchange library moves: the rate a
// profile's table gives for a number of members, as a cap on the bytes
// ptsim's exchange plan sends over NVLink or across the network.
#pragma once

#include <span>

#include "ptsim/common/ids.hpp"
#include "ptsim/hardware/cluster.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/taskgraph/task.hpp"

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

/// The SMs a library's dispatch and combine kernels hold when the run does
/// not say (Megatron-Core's moe_flex_dispatcher_num_sms left unset): DeepEP's
/// Buffer.num_sms, 20 (deep_ep/buffer.py); HybridEP's, 24 when the exchange
/// stays inside one NVLink domain and 8 when it spans several
/// (csrc/hybrid_ep/config.cuh, DeepEP's hybrid-ep branch).
double default_exchange_sms(taskgraph::ExchangeLibrary library, std::span<const Rank> members,
                            const hardware::Cluster& cluster);

}  // namespace ptsim::cost

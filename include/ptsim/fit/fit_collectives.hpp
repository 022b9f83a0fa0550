// `ptsim fit --nccl-tests`: a profile's network parameters (per-tier bus
// efficiency and step latency, NVLink SHARP's efficiency) fitted to measured
// collectives — every out-of-place row of every log, each predicted as
// `ptsim collective` predicts it (NCCL's choice of algorithm on the log's
// ranks) — by least squares on log(predicted / measured time).
#pragma once

#include <string>
#include <vector>

#include "ptsim/config/load_nccl_tests.hpp"
#include "ptsim/fit/fit_runs.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/taskgraph/task.hpp"

namespace ptsim::fit {

struct CollectiveFitOptions {
  std::vector<std::string> parameters;  // empty: every declared one the logs can identify
  double min_sensitivity = 0.01;
  double min_independence = 0.1;
};

struct CollectiveFitRow {
  std::string log;
  std::string op;
  std::int64_t ranks = 0;
  std::uint64_t bytes = 0;
  double measured_s = 0, before_s = 0, after_s = 0;
  double measured_busbw_GBps = 0, before_busbw_GBps = 0, after_busbw_GBps = 0;
  std::string algorithm_before, algorithm_after;  // e.g. "ring/simple"
};

struct CollectiveFitResult {
  hardware::FitRecord record;
  hardware::HardwareProfile fitted;
  std::vector<CollectiveFitRow> rows;
  int evaluations = 0;
};

/// The collective a log's op names ("all_reduce", … as config::nccl_tests_ops()).
taskgraph::CollectiveKind collective_kind(const std::string& op);

/// Throws ConfigError when the log's ranks do not fill the profile's nodes
/// as they ran (its ranks per node against the profile's GPUs per node, or
/// fewer than two ranks): ptsim's ranks fill nodes in order, as nccl-tests'.
void check_log_on_profile(const config::NcclTestsLog& log, const hardware::HardwareProfile& profile);

/// Throws ConfigError when a log's ranks do not fill the profile's nodes as
/// it ran (its ranks per node against the profile's GPUs per node), or a
/// named parameter cannot be identified.
CollectiveFitResult fit_collectives(const std::vector<config::NcclTestsLog>& logs,
                                    const hardware::HardwareProfile& profile, const CollectiveFitOptions& options,
                                    const FitProgress& progress = {});

}  // namespace ptsim::fit

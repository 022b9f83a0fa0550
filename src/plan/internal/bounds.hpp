// Cheap bounds on a strategy, for pruning before simulation. Private to plan/.
//   time    ≥ the busiest stage's kernels over all micro-batches (priced by
//             the cost model, without the slowdown communication adds) and
//             the TP collectives its compute stream waits for (at the NVLink
//             line rate), plus the pipeline fill 1F1B-like schedules cannot avoid;
//   memory  ≥ the static memory of a stage plus the activations its schedule
//             must hold at once (1F1B: p − s micro-batches on stage s).
// Both are true lower bounds: pruning on them never drops a candidate that
// exhaustive simulation would have ranked.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/strategy/parallel_config.hpp"
#include "ptsim/workload/layer_ops.hpp"

namespace ptsim::plan::internal {

struct Estimate {
  double time_s = 0;
  double memory_bytes = 0;
};

class Bounds {
 public:
  explicit Bounds(const hardware::HardwareProfile& hw) : hw_(hw) {}

  /// `model` as resolved for the run (sequence length applied, vocabulary unpadded).
  Estimate estimate(const model::ModelSpec& model, const strategy::ParallelConfig& c);

 private:
  struct LayerCost {
    double forward_s = 0, backward_s = 0;
    double forward_kernels = 0, backward_kernels = 0;  // each one the host must issue
    double saved = 0, saved_checkpoint = 0, saved_selective = 0;
    double blocking_comm_s = 0;  // TP collectives the compute stream waits for, at least (forward and backward)
  };
  const LayerCost& layer(const model::ModelSpec& m, const strategy::ParallelConfig& c, std::int64_t index);
  const LayerCost& boundary(const model::ModelSpec& m, const strategy::ParallelConfig& c, bool output);
  /// Adds the kernels of `ops`' backward to `cost`: their time and count.
  void count_backward(const workload::BlockOps& ops, LayerCost& cost) const;
  /// Per stage, the forwards its schedule runs before its first backward (the
  /// chunk activations it holds at once, at least), read off the schedule's order.
  const std::vector<std::int64_t>& in_flight(const strategy::ParallelConfig& c);

  const hardware::HardwareProfile& hw_;
  std::mutex mutex_;  // the memo is shared by the planner's threads
  std::map<std::string, LayerCost> memo_;
  std::map<std::tuple<strategy::ScheduleKind, std::int64_t, std::int64_t, std::int64_t, bool>,
           std::vector<std::int64_t>>
      in_flight_;  // by (schedule, pp, micro-batches, chunks, combined 1F1B)
};

}  // namespace ptsim::plan::internal

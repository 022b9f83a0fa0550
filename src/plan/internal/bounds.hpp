// Cheap bounds on a strategy, for pruning before simulation. Private to plan/.
//   time    ≥ the busiest stage's kernels over all micro-batches (priced by
//             the cost model, without the slowdown communication adds), the
//             TP collectives its compute stream waits for (at the NVLink
//             line rate) and the wait for ring attention's blocks (each
//             rank takes them one after another, each transfer at least its
//             time alone, so the slowest hop paces the ranks after it), plus
//             the pipeline fill 1F1B-like schedules cannot avoid, plus the
//             data-parallel buckets stage 0 reduces and gathers after its
//             last kernel; and ≥ its host's time to issue every kernel and
//             communication call of the stage;
//   memory  ≥ the static memory of a stage plus the activations its schedule
//             must hold at once (1F1B: p − s micro-batches on stage s).
// Both are true lower bounds: pruning on them never drops a candidate that
// exhaustive simulation would have ranked.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ptsim/cost/cost_model.hpp"
#include "ptsim/hardware/cluster.hpp"
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
  /// For strategies of one model (its layer costs are kept between calls)
  /// on `world_size` ranks of `hw`.
  Bounds(const hardware::HardwareProfile& hw, std::int64_t world_size)
      : hw_(hw), cluster_(hw, world_size), cost_(cluster_) {}

  /// `model` as resolved for the run (sequence length applied, vocabulary unpadded).
  Estimate estimate(const model::ModelSpec& model, const strategy::ParallelConfig& c);

  /// The least time a CP ring of blocks of `bytes` holds the compute stream
  /// of the stage's earliest rank, from its first send (and first step) to
  /// the end of its last step, `steps` the kernel times of its steps in
  /// order: each rank's transfers run one after another on its receive
  /// stream, each at least its time alone on its links (less a nanosecond of
  /// rounding), and a rank forwards a block only once it has it, so the
  /// slowest hop paces every rank downstream of it.
  double ring_hold_seconds(const strategy::ParallelConfig& c, std::uint64_t bytes, const std::vector<double>& steps);

 private:
  struct LayerCost {
    double forward_s = 0, backward_s = 0;
    double forward_tasks = 0, backward_tasks = 0;  // kernels and communication calls, each issued by the host
    double saved = 0, saved_checkpoint = 0, saved_selective = 0;
    double blocking_comm_s = 0;  // TP collectives the compute stream waits for, at least (forward and backward)
    // Ring attention in the forward (run again when recomputed) and the
    // backward: its transfers' size and its steps' kernel times.
    struct Ring {
      std::uint64_t bytes = 0;    // 0: no ring
      std::vector<double> steps;  // its steps' kernel times, in order
    } forward_ring, backward_ring;
  };
  // What a layer's costs depend on besides the model and the hardware, both
  // fixed for a Bounds: the micro-batch's shape on a rank and the modules
  // selective recomputation reruns. Candidates of one search share few of
  // them (micro-batch size, TP, CP, SP), so each is built once per search.
  struct ShapeKey {
    workload::MicroShape shape;
    strategy::RecomputeModules modules = 0;
    friend bool operator==(const ShapeKey&, const ShapeKey&) = default;
  };
  struct ShapeKeyHash {
    std::size_t operator()(const ShapeKey& k) const;
  };
  // The costs of one shape: each kind of layer (dense or MoE, full or
  // sliding-window attention) and the two boundary blocks, on first use.
  struct ShapeCosts {
    std::array<std::optional<LayerCost>, workload::kLayerKinds> layers;  // by workload::layer_kind
    std::optional<LayerCost> embedding, output;
  };
  ShapeCosts& costs_of(const workload::MicroShape& shape, strategy::RecomputeModules modules);
  const LayerCost& layer(const model::ModelSpec& m, const strategy::ParallelConfig& c, ShapeCosts& costs,
                         const workload::MicroShape& shape, std::int64_t index);
  /// What stage 0 must still communicate after its last kernel: the DP
  /// reduction Megatron-LM's DDP runs after the backward (not overlapped)
  /// and the ZeRO parameter all-gather after the optimizer (not overlapped
  /// with the next forward), each bucket at least its time alone.
  double data_parallel_tail_seconds(const model::ModelSpec& m, const strategy::ParallelConfig& c);
  /// A `kind` of `bytes` over a data-parallel group, at least its time alone.
  double data_parallel_seconds(const strategy::ParallelConfig& c, taskgraph::CollectiveKind kind, std::uint64_t bytes);
  /// `parameters` in buckets of `bucket`, each a `kind` of `bytes_per_parameter`
  /// each over rank 0's data-parallel group, one after another.
  double buckets_seconds(const strategy::ParallelConfig& c, taskgraph::CollectiveKind kind, std::int64_t parameters,
                         std::int64_t bucket, double bytes_per_parameter);
  /// The ring attention of `ops`, if it has one of cp blocks.
  LayerCost::Ring ring_of(const std::vector<workload::OpSpec>& ops, std::int64_t cp) const;
  /// The time alone of each hop of the CP ring of rank 0, into ring position
  /// i from position i − 1 (every ring repeats its tiers).
  const std::vector<double>& ring_hops(const strategy::ParallelConfig& c, std::uint64_t bytes);
  /// What `ring` holds the compute stream beyond its steps' kernels, at least.
  double ring_wait_seconds(const LayerCost::Ring& ring, const strategy::ParallelConfig& c);
  const LayerCost& boundary(const model::ModelSpec& m, ShapeCosts& costs, const workload::MicroShape& shape,
                            bool output);
  /// Adds the kernels of `ops`' backward to `cost`: their time and count.
  void count_backward(const workload::BlockOps& ops, LayerCost& cost) const;
  /// Per stage, the forwards its schedule runs before its first backward (the
  /// chunk activations it holds at once, at least), read off the schedule's order.
  const std::vector<std::int64_t>& in_flight(const strategy::ParallelConfig& c);

  const hardware::HardwareProfile& hw_;
  hardware::Cluster cluster_;
  cost::CostModel cost_;
  std::mutex mutex_;  // the memo is shared by the planner's threads
  std::unordered_map<ShapeKey, std::unique_ptr<ShapeCosts>, ShapeKeyHash> memo_;
  // A message size on a candidate's rank layout: what fixes the tiers its
  // groups cross, and so a transfer's or a collective's time alone.
  using LayoutKey = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::string, std::uint64_t>;
  static LayoutKey layout_key(const strategy::ParallelConfig& c, std::uint64_t bytes) {
    return {c.tp, c.cp, c.dp, c.pp, c.rank_order, bytes};
  }
  std::map<LayoutKey, std::vector<double>> ring_hops_;                     // by (tp, cp, dp, pp, rank order, bytes)
  std::map<std::pair<LayoutKey, std::vector<double>>, double> ring_hold_;  // by hops' key and steps
  std::map<std::tuple<LayoutKey, taskgraph::CollectiveKind>, double> collective_alone_;  // by group, bytes, kind
  std::map<std::tuple<strategy::ScheduleKind, std::int64_t, std::int64_t, std::int64_t, bool>,
           std::vector<std::int64_t>>
      in_flight_;  // by (schedule, pp, micro-batches, chunks, combined 1F1B)
};

}  // namespace ptsim::plan::internal

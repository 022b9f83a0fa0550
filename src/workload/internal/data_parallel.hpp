// A stage's data-parallel traffic: the collectives on its data-parallel
// stream, ZeRO-3's per-layer parameter parts, and the gradient reduction —
// ZeRO-3 reduce-scatters each layer's gradients after its backward in every
// micro-batch; ZeRO-2 reduce-scatters buckets in every micro-batch; plain
// data parallelism (all-reduce) and ZeRO-1 (reduce-scatter) reduce buckets in
// the last micro-batch's backward with --overlap-grad-reduce, else all after
// the last backward. FSDP2 under pipeline parallelism accumulates unsharded
// gradients and reduce-scatters them once, after each chunk's last backward
// (ParallelConfig::fsdp_gathers_once_a_step). Across Megatron's optimizer
// instances the reduced shards are all-reduced (Hybrid-FSDP:
// reduce-scattered) in the last micro-batch, on a stream of their own.
// Private to workload/.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "internal/program_builder.hpp"
#include "internal/stage_program.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/strategy/parallel_config.hpp"
#include "ptsim/taskgraph/task.hpp"
#include "ptsim/workload/stage_parameters.hpp"
#include "ptsim/workload/step_workload.hpp"

namespace ptsim::workload::internal {

class DataParallel {
 public:
  DataParallel(const StageContext& ctx, ProgramBuilder& out) : ctx_(ctx), c_(*ctx.config), m_(*ctx.model), out_(out) {}

  /// Ranks reducing the gradients of `slot` (dense or expert).
  std::int64_t group_of(std::uint8_t slot) const {
    return slot == slots::kExpertDataParallel ? ctx_.expert_group : ctx_.dense_group;
  }
  /// A collective on the data-parallel stream, its own block; `flags`:
  /// Task::flags (kTensorList).
  std::uint32_t collective(const std::string& name, std::uint8_t slot, taskgraph::CollectiveKind kind,
                           std::uint64_t bytes, bool blocks_next, std::uint64_t alloc = 0, std::uint8_t flags = 0,
                           bool follows_outer = false, std::uint32_t host_ops = 0);

  /// DeepSpeed 0.3's ZeRO-3 (--zero3-blocking) leaves a parameter tensor of
  /// fewer elements than stage3_param_persistence_threshold gathered for the
  /// whole step (zero/constants.py at v0.3.15: 100,000 by default;
  /// stage3.py release_sub_module skips ds_persist), and gathers all of them
  /// again once a step after the optimizer (_post_step; persistent_gather).
  static constexpr std::int64_t kPersistenceThreshold = 100'000;
  /// ... and keeps a module gathered after it ran when fewer parameter
  /// elements run before its next use (stage3_max_reuse_distance, 1e9 by
  /// default; _keep_for_later, _distance_in_numel over the traced modules).
  static constexpr double kMaxReuseDistance = 1e9;
  static bool persistent(std::int64_t elements) { return elements < kPersistenceThreshold; }

  /// Calls f(elements, slot) for each ZeRO-3 collective of layer `layer`'s
  /// parameters on a group of more than one rank: its dense parameters, then
  /// its experts'. DeepSpeed 0.3 (--zero3-blocking) moves the dense ones one
  /// tensor at a time, each over a list of one tensor per rank
  /// (partition_parameters.py _allgather_param and _reduce_scatter_gradient
  /// at v0.3.15), which PyTorch copies piece by piece (taskgraph::kTensorList);
  /// elsewhere a layer's parameters move together.
  template <typename F>
  void for_each_zero3_part(std::int64_t layer, F f) const {
    for_each_part(layer, false, f);
  }
  /// The parts of for_each_zero3_part a layer's use gathers: without
  /// DeepSpeed 0.3's persistent tensors, which stay gathered.
  template <typename F>
  void for_each_zero3_gathered(std::int64_t layer, F f) const {
    for_each_part(layer, true, f);
  }
  /// DeepSpeed 0.3 under full recomputation: the tensors of layer `layer`
  /// gathered a third time, for the backward, after its recomputed forward
  /// released them — each module's whose next use (its own backward) is
  /// kMaxReuseDistance elements or more away: the recomputed forward of the
  /// modules after it and their backward, twice their elements. The last
  /// module is used again at once and stays; persistent tensors stay.
  std::vector<std::int64_t> regathered_after_recompute(std::int64_t layer) const;
  /// DeepSpeed 0.3's fetch of a layer's modules, once their gathers are done:
  /// for every parameter of each module, fetched or kept, the debug line
  /// fetch_sub_module formats whether or not it prints (stage3.py at
  /// v0.3.15: print_rank_0(f"... norm {param.norm()}", force=False)), a
  /// norm kernel over the whole parameter (read 2 bytes an element) and the
  /// host waiting for its value (a 0-dim tensor formatted is .item()).
  void fetch_norms(std::int64_t layer, bool backward, std::int32_t mb);
  /// DeepSpeed 0.3's once-a-step gather of the stage's persistent tensors
  /// (_post_step → _allgather_params at v0.3.15), after the optimizer.
  void persistent_gather();

  /// Whether `slot`'s parameters have collectives: a group of more than one
  /// rank inside an optimizer instance, or more than one instance.
  bool sharded(std::uint8_t slot) const { return group_of(slot) > 1 || c_.optimizer_instances > 1; }
  /// Hybrid-FSDP: the gather across the optimizer instances of `n` of
  /// layer `layer`'s parameters (`slot`'s), their inner-DP shard at
  /// `bytes_per_parameter`, on a stream of its own; what gathers inside
  /// the instance then follows that stream. Returns the instance.
  std::uint32_t outer_gather(std::int64_t n, std::uint8_t slot, double bytes_per_parameter, std::int32_t mb,
                             std::int32_t layer);
  std::uint8_t zero3_flags() const { return c_.zero3_blocking ? taskgraph::kTensorList : 0; }
  /// DeepSpeed 0.3's gather of one parameter tensor of `n` elements, as a
  /// layer's pass reaches its module (_allgather_param at v0.3.15): its
  /// zeroed buffer (`alloc` allocated there), the device synchronized, one
  /// narrow view a rank in Python with the rank's own shard copied into its
  /// view, the all-gather over that list, and the host waiting for it before
  /// the module runs (stage3.py _synchronize_communication). Returns the
  /// all-gather, which the module waits for.
  taskgraph::TaskRef blocking_gather(std::int64_t n, std::uint8_t slot, double bytes_per_parameter, std::uint64_t alloc,
                                     bool backward, std::int32_t mb, std::int32_t layer);
  /// What a ZeRO-3 rank's gather of `n` parameters over `group` ranks
  /// allocates: the other ranks' shards, at `bytes_per_parameter` (2 in
  /// bf16; 1 under torchao's float8 all-gather).
  static std::uint64_t others_shards(std::int64_t n, std::int64_t group, double bytes_per_parameter);

  // ---- gradients, as each part of the model's backward finishes ----
  // `final`: the last micro-batch's backward of that part.
  void layer_gradients(std::int64_t layer, std::int32_t mb, bool final);
  void output_gradients(bool final);
  void embedding_gradients(bool final);
  /// After a backward step's gradients: ZeRO-2 and a final overlapped
  /// reduction flush the buckets; after a chunk's last backward, FSDP2
  /// under pipeline parallelism reduce-scatters what it accumulated.
  void end_of_gradients(bool final);
  /// At the step's end: all of the stage's gradients not yet reduced, in buckets.
  void reduce_remaining();
  /// A tied LM head needs its own copy when the embedding is on another rank.
  bool separate_head() const { return c_.pp > 1; }

 private:
  bool zero3() const { return c_.zero_stage >= 3; }
  template <typename F>
  void for_each_part(std::int64_t layer, bool gathered, F f) const {
    const RankParameters p = layer_parameters_per_rank(m_, c_, layer);
    if (p.dense > 0 && sharded(slots::kDataParallel)) {
      if (c_.zero3_blocking) {
        for (const std::int64_t n : layer_parameter_tensors(m_, c_, layer))
          if (!gathered || !persistent(n)) f(n, slots::kDataParallel);
      } else {
        f(p.dense, slots::kDataParallel);
      }
    }
    if (p.expert > 0 && sharded(slots::kExpertDataParallel)) f(p.expert, slots::kExpertDataParallel);
  }
  bool reduce_now(bool final) const;
  void zero3_boundary_gradients(std::int64_t n, bool final);
  void reduce_scatter_gradients(std::int64_t n, std::uint8_t slot, std::int32_t mb, std::int32_t layer, bool final);
  void outer_reduce(std::int64_t n, std::uint8_t slot, std::int32_t mb, std::int32_t layer);
  std::uint32_t outer_collective(const std::string& name, std::int64_t n, std::uint8_t slot,
                                 taskgraph::CollectiveKind kind, double bytes_per_parameter, std::int32_t mb,
                                 std::int32_t layer);
  void accumulate_unsharded(std::int64_t n, std::int32_t mb, std::int32_t layer);
  void compute_memory_kernel(const std::string& op_name, double bytes, std::int32_t mb, std::int32_t layer);
  void fsdp_copy_in(std::int64_t n, std::int32_t mb, std::int32_t layer);
  void hsdp_allreduce(std::int64_t n, std::uint8_t slot, std::int32_t mb, std::int32_t layer);
  void gradients_ready(const RankParameters& p, bool final);
  void add_to_bucket(std::int64_t& bucket, std::int64_t parameters, std::uint8_t slot, bool final);
  void flush_buckets(bool final);
  void flush_bucket(std::int64_t& bucket, std::uint8_t slot, bool final);

  const StageContext& ctx_;
  const strategy::ParallelConfig& c_;
  const model::ModelSpec& m_;
  ProgramBuilder& out_;
  std::int64_t dense_bucket_ = 0, expert_bucket_ = 0;
  /// Gradients FSDP2 reduce-scatters after the chunk's last backward.
  struct Deferred {
    std::int64_t n;
    std::uint8_t slot;
    std::int32_t mb, layer;
  };
  std::vector<Deferred> deferred_;
  std::unordered_set<std::int64_t> has_unsharded_gradients_;  // blocks with accumulated gradients
};

}  // namespace ptsim::workload::internal

// A stage's data-parallel collectives and gradient buckets (see
// internal/data_parallel.hpp).
#include "internal/data_parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ptsim/common/error.hpp"
#include "ptsim/strategy/schedule.hpp"

namespace ptsim::workload::internal {

using taskgraph::CollectiveKind;

std::uint32_t DataParallel::collective(const std::string& name, std::uint8_t slot, taskgraph::CollectiveKind kind,
                                       std::uint64_t bytes, bool blocks_next, std::uint64_t alloc, std::uint8_t flags,
                                       bool follows_outer, std::uint32_t host_ops) {
  return out_.block(fmt::format("{}.{}.{}{}.{}{}.{}", name, bytes, alloc, blocks_next ? ".blocking" : "", flags,
                                follows_outer ? ".after_outer" : "", host_ops),
                    [&](BlockRecorder& b) {
                      const auto id = b.emit_collective(streams::kDataParallel, slot, categories::kDataParallel, bytes,
                                                        name, blocks_next, kind, alloc, flags, host_ops);
                      if (follows_outer) b.follow_stream(id, streams::kDataParallelOuter);
                    });
}

namespace {

// A count of Python tensor operations as Task::host_ops holds it (32 bits).
std::uint32_t python_ops(double count) {
  if (!(count >= 0 && count <= static_cast<double>(std::numeric_limits<std::uint32_t>::max())))
    throw ConfigError(
        fmt::format("DeepSpeed 0.3's ZeRO-3 (--zero3-blocking) would loop over {:.4g} tensors in "
                    "Python for one collective, beyond what ptsim counts (2^32): fewer "
                    "data-parallel ranks or parameter tensors",
                    count));
  return static_cast<std::uint32_t>(count);
}

}  // namespace

taskgraph::TaskRef DataParallel::blocking_gather(std::int64_t n, std::uint8_t slot, double bytes_per_parameter,
                                                 std::uint64_t alloc, bool backward, std::int32_t mb,
                                                 std::int32_t layer) {
  const std::int64_t group = group_of(slot);
  const double whole = bytes_per_parameter * static_cast<double>(n);
  const auto category = backward ? categories::kBackward : categories::kForward;
  const auto block =
      out_.block(fmt::format("zero3.blocking_gather.{}.{}.{}.{}.{}", n, slot, bytes_per_parameter, alloc, category),
                 [&](BlockRecorder& b) {
                   // torch.zeros of the whole tensor, then torch.cuda.synchronize().
                   OpSpec zeros = memory_op("zero3.gather_buffer_zeros", whole);
                   zeros.flags = taskgraph::kHostSync;
                   // The rank's own shard into its view (read and write it).
                   const OpSpec own = memory_op("zero3.own_shard_copy", 2 * whole / static_cast<double>(group));
                   b.begin_list();
                   const auto names = b.names_of({zeros, own}, "");
                   b.emit(zeros, names[0], category, alloc, 0);
                   b.emit(own, names[1], category, 0, 0);
                   b.emit_collective(streams::kDataParallel, slot, categories::kDataParallel,
                                     static_cast<std::uint64_t>(whole), "zero3.param_allgather", false,
                                     CollectiveKind::AllGather, 0,
                                     taskgraph::kTensorList | taskgraph::kHostWaitsForTask,
                                     python_ops(static_cast<double>(group)));
                 });
  constexpr taskgraph::TaskId kGather = 2;  // the block's third task, after its two kernels
  return {out_.instantiate(block, mb, layer), kGather};
}

std::vector<std::int64_t> DataParallel::regathered_after_recompute(std::int64_t layer) const {
  std::vector<std::int64_t> again;
  if (!c_.zero3_blocking || !sharded(slots::kDataParallel)) return again;
  const auto modules = layer_parameter_modules(m_, c_, layer);
  double after = 0;  // elements of the modules after module i
  std::vector<bool> released(modules.size(), false);
  for (std::size_t i = modules.size(); i-- > 0;) {
    released[i] = 2 * after >= kMaxReuseDistance;
    after += static_cast<double>(std::accumulate(modules[i].begin(), modules[i].end(), std::int64_t{0}));
  }
  for (std::size_t i = 0; i < modules.size(); ++i)
    if (released[i])
      for (const std::int64_t t : modules[i])
        if (!persistent(t)) again.push_back(t);
  return again;
}

void DataParallel::fetch_norms(std::int64_t layer, bool backward, std::int32_t mb) {
  if (!c_.zero3_blocking || !sharded(slots::kDataParallel)) return;
  const auto tensors = layer_parameter_tensors(m_, c_, layer);
  const auto category = backward ? categories::kBackward : categories::kForward;
  std::string key = fmt::format("zero3.fetch_norms.{}", category);
  for (const std::int64_t t : tensors) key += fmt::format(".{}", t);
  const auto block = out_.block(key, [&](BlockRecorder& b) {
    b.begin_list();
    std::vector<OpSpec> norms;
    for (const std::int64_t t : tensors) {
      norms.push_back(memory_op("zero3.fetch_param_norm", 2 * static_cast<double>(t)));
      norms.back().flags = taskgraph::kHostWaitsForTask;
    }
    const auto names = b.names_of(norms, "");
    for (std::size_t i = 0; i < norms.size(); ++i) b.emit(norms[i], names[i], category, 0, 0);
  });
  out_.instantiate(block, mb, static_cast<std::int32_t>(layer));
}

// After the optimizer updated their shards: one all-gather of every
// persistent tensor of the stage's layers over a list of one narrow view a
// rank, then each tensor copied out of the buffer rank by rank in Python
// (narrow, view, narrow, copy_: four operations, one of them a copy
// kernel, for each tensor and rank; the kernels, each a tensor's piece, run
// as fast as the host issues them, so they are one task of their bytes).
void DataParallel::persistent_gather() {
  if (!c_.zero3_blocking || !sharded(slots::kDataParallel)) return;
  double tensors = 0, elements = 0;
  for (const strategy::LayerRange& chunk : ctx_.chunks)
    for (std::int64_t l = chunk.first; l < chunk.first + chunk.count; ++l)
      for (const std::int64_t t : layer_parameter_tensors(m_, c_, l))
        if (persistent(t)) {
          tensors += 1;
          elements += static_cast<double>(t);
        }
  if (tensors == 0) return;
  const auto group = static_cast<double>(group_of(slots::kDataParallel));
  const double bytes = 2 * elements;
  const auto block = out_.block(fmt::format("zero3.persistent_gather.{}.{}", tensors, elements), [&](BlockRecorder& b) {
    b.emit_collective(streams::kDataParallel, slots::kDataParallel, categories::kDataParallel,
                      static_cast<std::uint64_t>(bytes), "zero3.persistent_param_allgather", true,
                      CollectiveKind::AllGather, 0, taskgraph::kTensorList, python_ops(group));
    OpSpec copy_out = memory_op("zero3.persistent_copy_out", 2 * bytes);
    copy_out.host_ops = python_ops(4 * tensors * group);
    b.begin_list();
    b.emit(copy_out, b.names_of({copy_out}, "")[0], categories::kOptimizer, 0, 0);
  });
  out_.instantiate(block, -1, -1);
}

namespace {

// The slot of the ranks holding the same shard in the other optimizer
// instances.
std::uint8_t outer_slot(std::uint8_t slot) {
  return slot == slots::kExpertDataParallel ? slots::kExpertDataParallelReplicate : slots::kDataParallelReplicate;
}

}  // namespace

// Across the optimizer instances, on their own stream, after what the
// instance did on its data-parallel stream: a collective of the inner shard
// of `n` parameters, `bytes_per_parameter` each.
std::uint32_t DataParallel::outer_collective(const std::string& name, std::int64_t n, std::uint8_t slot,
                                             taskgraph::CollectiveKind kind, double bytes_per_parameter,
                                             std::int32_t mb, std::int32_t layer) {
  const double shard = static_cast<double>(n) / static_cast<double>(group_of(slot));
  const auto bytes = static_cast<std::uint64_t>(std::ceil(bytes_per_parameter * shard));
  const auto block = out_.block(fmt::format("{}.{}.{}", name, bytes, slot), [&](BlockRecorder& b) {
    const auto id = b.emit_collective(streams::kDataParallelOuter, outer_slot(slot), categories::kDataParallel, bytes,
                                      name, false, kind);
    b.follow_stream(id, streams::kDataParallel);
  });
  return out_.instantiate(block, mb, layer);
}

// Megatron's instances: the shard the instance reduced, all-reduced across
// the instances (param_and_grad_buffer.py start_grad_sync; Megatron-FSDP's
// HSDP), or reduce-scattered across them under Hybrid-FSDP, whose
// optimizer holds a 1/instances share of it.
void DataParallel::outer_reduce(std::int64_t n, std::uint8_t slot, std::int32_t mb, std::int32_t layer) {
  if (c_.optimizer_instances <= 1) return;
  const bool scatter = c_.outer_optimizer_sharding;
  outer_collective(scatter ? "dp_outer.grad_reducescatter" : "dp_outer.grad_allreduce", n, slot,
                   scatter ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce, c_.gradient_bytes(), mb, layer);
}

std::uint32_t DataParallel::outer_gather(std::int64_t n, std::uint8_t slot, double bytes_per_parameter, std::int32_t mb,
                                         std::int32_t layer) {
  return outer_collective("dp_outer.param_allgather", n, slot, CollectiveKind::AllGather, bytes_per_parameter, mb,
                          layer);
}

std::uint64_t DataParallel::others_shards(std::int64_t n, std::int64_t group, double bytes_per_parameter) {
  return group <= 1 ? 0
                    : static_cast<std::uint64_t>(bytes_per_parameter * static_cast<double>(n) *
                                                 static_cast<double>(group - 1) / static_cast<double>(group));
}

bool DataParallel::reduce_now(bool final) const {
  if (strategy::describe(c_.schedule).two_directions)
    return false;  // both chunks' gradients are summed with the mirror stage at the end
  if (c_.zero_stage >= 2) return true;
  return final && c_.overlap_grad_reduce;
}

// FSDP2 concatenates a block's gradients into the reduce-scatter's input in
// the reduction type on the compute stream before the reduce-scatter
// stream takes it (foreach_reduce_scatter_copy_in, torch._chunk_cat: read
// bf16, write fp32 by default; on the current stream since pytorch/pytorch
// PR #129721, June 2024).
void DataParallel::fsdp_copy_in(std::int64_t n, std::int32_t mb, std::int32_t layer) {
  compute_memory_kernel("fsdp.reduce_scatter_copy_in", static_cast<double>(n) * (2.0 + c_.gradient_bytes()), mb, layer);
}

// One memory-bound kernel of the backward on the compute stream.
void DataParallel::compute_memory_kernel(const std::string& op_name, double bytes, std::int32_t mb,
                                         std::int32_t layer) {
  const auto block = out_.block(fmt::format("{}.{}", op_name, bytes), [&](BlockRecorder& b) {
    const OpSpec op = memory_op(op_name, bytes);
    b.begin_list();
    b.emit(op, b.names_of({op}, "")[0], categories::kBackward, 0, 0);
  });
  out_.instantiate(block, mb, layer);
}

// Gradients reduce-scattered over their shard group (FSDP2: after its
// copy-in; nothing on a group of one), then, under HSDP, the shard
// all-reduced across the replicas; across Megatron's instances in the last
// micro-batch only.
void DataParallel::reduce_scatter_gradients(std::int64_t n, std::uint8_t slot, std::int32_t mb, std::int32_t layer,
                                            bool final) {
  if (group_of(slot) > 1) {
    if (c_.fsdp_version == 2) fsdp_copy_in(n, mb, layer);
    // DeepSpeed 0.3 builds the reduce-scatter's list in Python, a view and a
    // narrow of the gradient a rank (_reduce_scatter_gradient at v0.3.15).
    const double views = c_.zero3_blocking ? 2.0 * static_cast<double>(group_of(slot)) : 0.0;
    out_.instantiate(collective("zero3.grad_reducescatter", slot, CollectiveKind::ReduceScatter,
                                static_cast<std::uint64_t>(c_.gradient_bytes() * n), c_.zero3_blocking, 0,
                                zero3_flags(), false, python_ops(views)),
                     mb, layer);
  }
  hsdp_allreduce(n, slot, mb, layer);
  if (final) outer_reduce(n, slot, mb, layer);
}

// A later micro-batch's gradients added to the unsharded ones (autograd's
// AccumulateGrad, param.grad += grad: read both, write one, 2 bytes each).
void DataParallel::accumulate_unsharded(std::int64_t n, std::int32_t mb, std::int32_t layer) {
  compute_memory_kernel("fsdp.grad_accumulate", 6.0 * static_cast<double>(n), mb, layer);
}

void DataParallel::layer_gradients(std::int64_t layer, std::int32_t mb, bool final) {
  const auto at = static_cast<std::int32_t>(layer);
  if (zero3() && c_.fsdp_gathers_once_a_step()) {
    const bool later = !has_unsharded_gradients_.insert(layer).second;  // not the block's first backward
    for_each_zero3_part(layer, [&](std::int64_t n, std::uint8_t slot) {
      if (later) accumulate_unsharded(n, mb, at);
      if (final) deferred_.push_back({n, slot, mb, at});
    });
    return;
  }
  if (zero3()) {
    for_each_zero3_part(layer,
                        [&](std::int64_t n, std::uint8_t slot) { reduce_scatter_gradients(n, slot, mb, at, final); });
    return;
  }
  if (reduce_now(final)) gradients_ready(layer_parameters_per_rank(m_, c_, layer), final);
}

void DataParallel::output_gradients(bool final) {
  RankParameters p{output_parameters_per_rank(m_, c_.tp, separate_head()), 0};
  p += mtp_parameters_per_rank(m_, c_, separate_head() && !m_.tie_embeddings);
  if (zero3()) {
    zero3_boundary_gradients(p.total(), final);  // the MTP depths' experts, if any, counted as dense here
  } else if (reduce_now(final)) {
    gradients_ready(p, final);
  }
}

void DataParallel::embedding_gradients(bool final) {
  const std::int64_t n = embedding_parameters_per_rank(m_, c_.tp);
  if (zero3()) {
    zero3_boundary_gradients(n, final);
  } else if (reduce_now(final)) {
    gradients_ready({n, 0}, final);
  }
}

// The root module's parameters (embedding, output layer), reduced with the
// step's blocks; under pipeline parallelism FSDP2 accumulates them too
// (their additions, under a thousandth of the blocks', not counted).
void DataParallel::zero3_boundary_gradients(std::int64_t n, bool final) {
  if (c_.fsdp_gathers_once_a_step()) {
    if (final) deferred_.push_back({n, slots::kDataParallel, -1, -1});
    return;
  }
  reduce_scatter_gradients(n, slots::kDataParallel, -1, -1, final);
}

// HSDP: the reduce-scattered shard is all-reduced across the replicas
// (FSDP2's foreach_reduce: all_reduce over the replicate group after the
// reduce-scatter over the shard group), in the reduction type.
void DataParallel::hsdp_allreduce(std::int64_t n, std::uint8_t slot, std::int32_t mb, std::int32_t layer) {
  if (!c_.fsdp() || c_.dp_replicate() <= 1 || slot != slots::kDataParallel) return;
  const auto shard = static_cast<double>(n) / static_cast<double>(ctx_.dense_group);
  out_.instantiate(collective("hsdp.grad_allreduce", slots::kDataParallelReplicate, CollectiveKind::AllReduce,
                              static_cast<std::uint64_t>(std::ceil(c_.gradient_bytes() * shard)), false),
                   mb, layer);
}

void DataParallel::end_of_gradients(bool final) {
  if (final) {
    // torch.distributed.pipelining's post_backward of each FSDP2 parameter
    // group after the chunk's last backward.
    for (const Deferred& d : deferred_) reduce_scatter_gradients(d.n, d.slot, d.mb, d.layer, true);
    deferred_.clear();
  }
  if (c_.zero_stage == 2 || (reduce_now(final) && final)) flush_buckets(final);
}

void DataParallel::gradients_ready(const RankParameters& p, bool final) {
  add_to_bucket(dense_bucket_, p.dense, slots::kDataParallel, final);
  add_to_bucket(expert_bucket_, p.expert, slots::kExpertDataParallel, final);
}

void DataParallel::add_to_bucket(std::int64_t& bucket, std::int64_t parameters, std::uint8_t slot, bool final) {
  if (parameters == 0 || !sharded(slot)) return;
  bucket += parameters;
  if (bucket >= ctx_.ddp_bucket_parameters) flush_bucket(bucket, slot, final);
}

void DataParallel::flush_buckets(bool final) {
  flush_bucket(dense_bucket_, slots::kDataParallel, final);
  flush_bucket(expert_bucket_, slots::kExpertDataParallel, final);
}

// Megatron-LM's DDP: a bucket of gradients (fp32 unless
// --grad-reduce-in-bf16) all-reduced (ZeRO: reduce-scattered) over the
// ranks that hold the same parameters, then, in the last micro-batch, its
// shard across the optimizer instances.
void DataParallel::flush_bucket(std::int64_t& bucket, std::uint8_t slot, bool final) {
  if (bucket == 0) return;
  const bool shard = c_.zero_stage >= 1;
  const std::string name = fmt::format("{}.grad_{}.bucket", slot == slots::kExpertDataParallel ? "edp" : "dp",
                                       shard ? "reducescatter" : "allreduce");
  if (group_of(slot) > 1)
    out_.instantiate(collective(name, slot, shard ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce,
                                static_cast<std::uint64_t>(c_.gradient_bytes() * bucket), false),
                     -1, -1);
  if (final) outer_reduce(bucket, slot, -1, -1);
  bucket = 0;
}

// All of the stage's gradients not yet reduced, in buckets.
void DataParallel::reduce_remaining() {
  if (zero3() || c_.zero_stage == 2) return;
  if (reduce_now(true)) return;  // reduced during the final backward
  const auto reduce = [&](std::int64_t total, std::uint8_t slot, std::int64_t& bucket) {
    if (!sharded(slot)) return;
    for (std::int64_t left = total; left > 0;) {
      const std::int64_t n = std::min(left, ctx_.ddp_bucket_parameters);
      bucket = n;
      flush_bucket(bucket, slot, true);
      left -= n;
    }
  };
  reduce(ctx_.stage_parameters.dense, slots::kDataParallel, dense_bucket_);
  reduce(ctx_.stage_parameters.expert, slots::kExpertDataParallel, expert_bucket_);
}

}  // namespace ptsim::workload::internal

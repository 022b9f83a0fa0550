// Lower bounds on step time and peak memory (see internal/bounds.hpp).
#include "internal/bounds.hpp"

#include <algorithm>
#include <vector>

#include "ptsim/cost/compute_cost.hpp"
#include "ptsim/strategy/rank_layout.hpp"
#include "ptsim/strategy/pipeline_schedule.hpp"
#include "ptsim/strategy/schedule.hpp"
#include "ptsim/strategy/stage_partition.hpp"
#include "ptsim/workload/boundary_ops.hpp"
#include "ptsim/workload/layer_ops.hpp"
#include "ptsim/workload/step_workload.hpp"

namespace ptsim::plan::internal {

namespace {

bool is_kernel(const workload::OpSpec& op) {
  return op.kind == workload::OpKind::Matmul || op.kind == workload::OpKind::MemoryBound ||
         op.kind == workload::OpKind::Attention;
}

bool is_comm(const workload::OpSpec& op) {
  return op.kind == workload::OpKind::Collective || op.kind == workload::OpKind::Send ||
         op.kind == workload::OpKind::Recv;
}

// TP collectives that hold the compute stream: each waits for the kernel
// before it (no `after`) and the kernel after it waits for it (neither
// async nor detached), so on the in-order stream nothing of the rank
// computes meanwhile. Each moves at least (t − 1)/t of its nccl-tests size
// through every GPU's NVLink in one direction, whatever the algorithm
// (ring, NVLink SHARP: the switch still reads or writes that much of each
// GPU), so it lasts at least that over the per-GPU NVLink rate.
double blocking_tp_seconds(const std::vector<workload::OpSpec>& ops, std::int64_t tp, double nvlink_bytes_per_s) {
  if (tp < 2 || nvlink_bytes_per_s <= 0) return 0;
  const double share = static_cast<double>(tp - 1) / static_cast<double>(tp);
  double seconds = 0;
  for (std::size_t i = 0; i + 1 < ops.size(); ++i) {
    const auto& op = ops[i];
    if (op.kind != workload::OpKind::Collective || op.group != workload::CommGroup::TensorParallel) continue;
    if (op.async || op.detached || op.after >= 0 || !is_kernel(ops[i + 1])) continue;
    seconds += share * static_cast<double>(op.bytes) / nvlink_bytes_per_s;
  }
  return seconds;
}

}  // namespace

std::size_t Bounds::ShapeKeyHash::operator()(const ShapeKey& k) const {
  // The fields that vary between a search's candidates; equal keys agree on them.
  std::size_t h = std::hash<std::int64_t>{}(k.shape.micro_batch);
  for (const std::int64_t v :
       {k.shape.seq_length, k.shape.tp, k.shape.cp, k.shape.ep, static_cast<std::int64_t>(k.shape.sequence_parallel),
        static_cast<std::int64_t>(k.modules)})
    h = h * 1000003u ^ std::hash<std::int64_t>{}(v);
  return h;
}

Bounds::ShapeCosts& Bounds::costs_of(const workload::MicroShape& shape, strategy::RecomputeModules modules) {
  const std::lock_guard lock(mutex_);
  auto& slot = memo_[ShapeKey{shape, modules}];
  if (!slot) slot = std::make_unique<ShapeCosts>();
  return *slot;
}

const Bounds::LayerCost& Bounds::layer(const model::ModelSpec& m, const strategy::ParallelConfig& c, ShapeCosts& costs,
                                       const workload::MicroShape& shape, std::int64_t index) {
  std::optional<LayerCost>& memo = costs.layers[workload::layer_kind(m, index)];
  {
    const std::lock_guard lock(mutex_);
    if (memo) return *memo;
  }
  const workload::BlockOps ops = workload::transformer_layer_ops(m, shape, index);
  LayerCost cost;
  for (std::size_t i = 0; i < ops.forward.size(); ++i) {
    const auto& op = ops.forward[i];
    if (is_kernel(op)) cost.forward_s += cost::compute_seconds(hw_, workload::kernel_task(op), cost::Load::Sustained);
    if (is_kernel(op) || is_comm(op)) ++cost.forward_tasks;
    cost.saved += static_cast<double>(op.saved_bytes);
    // Full recomputation keeps the layer input (bf16), at most what the first op saves.
    if (i == 0)
      cost.saved_checkpoint =
          std::min(static_cast<double>(op.saved_bytes), 2 * shape.sp_tokens() * static_cast<double>(m.hidden_size));
    cost.saved_selective += static_cast<double>(op.kept_bytes(c.recompute_modules));
  }
  count_backward(ops, cost);
  cost.blocking_comm_s = blocking_tp_seconds(ops.forward, c.tp, hw_.nvlink.bandwidth_bytes_per_s) +
                         blocking_tp_seconds(ops.backward, c.tp, hw_.nvlink.bandwidth_bytes_per_s);
  cost.forward_ring = ring_of(ops.forward, c.cp);
  cost.backward_ring = ring_of(ops.backward, c.cp);
  const std::lock_guard lock(mutex_);
  if (!memo) memo = cost;
  return *memo;
}

void Bounds::count_backward(const workload::BlockOps& ops, LayerCost& cost) const {
  for (const auto& op : ops.backward) {
    if (is_kernel(op)) cost.backward_s += cost::compute_seconds(hw_, workload::kernel_task(op), cost::Load::Sustained);
    if (is_kernel(op) || is_comm(op)) ++cost.backward_tasks;
  }
}

double Bounds::ring_chain_seconds(const strategy::ParallelConfig& c, std::uint64_t bytes) {
  const auto key = std::make_tuple(c.tp, c.cp, c.dp, c.pp, c.rank_order, bytes);
  {
    const std::lock_guard lock(mutex_);
    if (const auto it = ring_chain_.find(key); it != ring_chain_.end()) return it->second;
  }
  // Every CP ring repeats rank 0's up to the tiers of its hops. A hop lasts
  // at least its plan's time alone on its links (the engine's flows share
  // links, never run faster), less a nanosecond of the engine's rounding.
  const strategy::RankLayout layout(c.tp, c.cp, 1, c.dp, c.pp, c.rank_order);
  const std::vector<Rank> ring = layout.group(0, strategy::Axis::Cp);
  taskgraph::Task transfer;
  transfer.kind = taskgraph::TaskKind::Send;
  transfer.collective = taskgraph::CollectiveKind::PointToPoint;
  transfer.bytes = bytes;
  double cycle = 0, longest = 0;
  for (std::size_t i = 0; i < ring.size(); ++i) {
    const taskgraph::Communicator pair{{ring[i], ring[(i + 1) % ring.size()]}, std::nullopt};
    const double hop = std::max(0.0, cost_.communication_plan(transfer, pair).estimated_s - 1e-9);
    cycle += hop;
    longest = std::max(longest, hop);
  }
  // The last step's block has come cp − 1 hops: a window of the cycle that
  // leaves out one hop, at best the longest.
  const double chain = cycle - longest;
  const std::lock_guard lock(mutex_);
  return ring_chain_.emplace(key, chain).first->second;
}

// Ring attention (workload's ring_attention): step j's kernel waits for
// the block received at step j − 1, and a rank forwards a block only once
// it has it, so the last step cannot start before the first sends were
// issued plus cp − 1 transfers in a row. Taking the CP rank of a stage that
// starts its ring first, the ring holds the stage's compute stream at least
// max(Σ steps, chain + last step): beyond its kernels, the difference.
Bounds::LayerCost::Ring Bounds::ring_of(const std::vector<workload::OpSpec>& ops, std::int64_t cp) const {
  LayerCost::Ring ring;
  if (cp < 2) return ring;
  std::int64_t sends = 0;
  for (const auto& op : ops) {
    if (op.group == workload::CommGroup::ContextParallel && op.kind == workload::OpKind::Send) {
      ring.bytes = op.bytes;
      ++sends;
    }
    if (op.kind == workload::OpKind::Attention && sends > 0) {
      ring.last_step_s = cost::compute_seconds(hw_, workload::kernel_task(op), cost::Load::Sustained);
      ring.steps_s += ring.last_step_s;
    }
  }
  if (sends + 1 != cp) return {};  // not one ring of cp blocks
  return ring;
}

double Bounds::ring_wait_seconds(const LayerCost::Ring& ring, const strategy::ParallelConfig& c) {
  if (ring.bytes == 0) return 0;
  return std::max(0.0, ring_chain_seconds(c, ring.bytes) + ring.last_step_s - ring.steps_s);
}

const Bounds::LayerCost& Bounds::boundary(const model::ModelSpec& m, ShapeCosts& costs,
                                          const workload::MicroShape& shape, bool output) {
  std::optional<LayerCost>& memo = output ? costs.output : costs.embedding;
  {
    const std::lock_guard lock(mutex_);
    if (memo) return *memo;
  }
  const workload::BlockOps ops = output ? workload::output_ops(m, shape) : workload::embedding_ops(m, shape);
  LayerCost cost;
  for (const auto& op : ops.forward) {
    if (is_kernel(op)) cost.forward_s += cost::compute_seconds(hw_, workload::kernel_task(op), cost::Load::Sustained);
    if (is_kernel(op) || is_comm(op)) ++cost.forward_tasks;
    cost.saved += static_cast<double>(op.saved_bytes);
  }
  count_backward(ops, cost);
  cost.saved_checkpoint = cost.saved_selective = cost.saved;
  const std::lock_guard lock(mutex_);
  if (!memo) memo = cost;
  return *memo;
}

const std::vector<std::int64_t>& Bounds::in_flight(const strategy::ParallelConfig& c) {
  const std::int64_t micro = c.num_microbatches();
  const std::int64_t chunks = strategy::chunks_per_stage(c);
  const auto key = std::make_tuple(c.schedule, c.pp, micro, chunks, c.overlap_moe_expert_parallel_comm);
  {
    const std::lock_guard lock(mutex_);
    if (const auto it = in_flight_.find(key); it != in_flight_.end()) return it->second;
  }
  std::vector<std::int64_t> n;
  for (std::int64_t stage = 0; stage < c.pp; ++stage)
    n.push_back(strategy::forwards_before_first_backward(c.schedule, stage, c.pp, micro, chunks,
                                                         c.overlap_moe_expert_parallel_comm));
  const std::lock_guard lock(mutex_);
  return in_flight_.emplace(key, std::move(n)).first->second;
}

Estimate Bounds::estimate(const model::ModelSpec& model, const strategy::ParallelConfig& c) {
  model::ModelSpec m = model;
  m.vocab_size = workload::padded_vocab_size(model.vocab_size, c.tp);
  const strategy::ScheduleDescriptor& schedule = strategy::describe(c.schedule);
  const std::int64_t micro = c.num_microbatches();
  const std::int64_t chunks = strategy::chunks_per_stage(c);
  const std::int64_t total_virtual = strategy::path_stages(c.schedule, c.pp, chunks);
  const bool full = c.recompute == strategy::RecomputeKind::Full;
  // torchtitan's op checkpointing keeps at least the layer input and reruns
  // at least nothing: a full checkpoint's memory and no rerun bound it below.
  const bool op = c.recompute == strategy::RecomputeKind::Op;
  const bool selective = c.recompute == strategy::RecomputeKind::Selective;
  // Chunk activations (one micro-batch through one model chunk) a stage
  // holds at once, at least: the forwards its schedule runs before its
  // first backward.
  const std::vector<std::int64_t>& held = in_flight(c);
  const workload::MicroShape shape = workload::micro_shape(m, c);
  ShapeCosts& costs = costs_of(shape, c.recompute_modules);
  // One compute stream: what holds it holds the stage (two lanes, DualPipe's
  // or the combined 1F1B's, may compute beside a blocked one).
  const bool one_lane = !schedule.two_directions && !c.overlap_moe_expert_parallel_comm;
  // Per stage: kernel time of one micro-batch (forward, backward and
  // recomputation of all its chunks).
  std::vector<double> per_micro(static_cast<std::size_t>(c.pp), 0.0);
  // Per stage: tasks of one micro-batch — kernels and communication calls —
  // each of which its host issues one after the other (cost::HostIssue):
  // the host alone needs m · tasks · host time, whatever the GPU does.
  std::vector<double> tasks_per_micro(static_cast<std::size_t>(c.pp), 0.0);
  // Per stage: kernel time of one micro-batch through its first chunk (the
  // virtual stage numbered as the stage).
  std::vector<double> first_chunk(static_cast<std::size_t>(c.pp), 0.0);
  double memory = 0;
  for (std::int64_t stage = 0; stage < c.pp; ++stage) {
    const auto ranges = strategy::stage_chunks(c, stage);
    double work = 0, saved = 0, tasks = 0;
    for (std::size_t k = 0; k < ranges.size(); ++k) {
      for (std::int64_t l = 0; l < ranges[k].count; ++l) {
        const std::int64_t index = ranges[k].first + l;
        const LayerCost& lc = layer(m, c, costs, shape, index);
        const bool recomputed = full && (c.recompute_num_layers == 0 || l < c.recompute_num_layers);
        const double ring_wait = one_lane ? ring_wait_seconds(lc.forward_ring, c) * (recomputed ? 2 : 1) +
                                                ring_wait_seconds(lc.backward_ring, c)
                                          : 0;
        work += lc.forward_s + lc.backward_s + (recomputed ? lc.forward_s : 0) + (one_lane ? lc.blocking_comm_s : 0) +
                ring_wait;
        tasks += lc.forward_tasks + lc.backward_tasks + (recomputed ? lc.forward_tasks : 0);
        saved += recomputed || op ? lc.saved_checkpoint : selective ? lc.saved_selective : lc.saved;
      }
      const std::int64_t v = strategy::virtual_stage(c.schedule, stage, c.pp, static_cast<std::int64_t>(k));
      if (v == 0) {
        const LayerCost& e = boundary(m, costs, shape, false);
        work += e.forward_s + e.backward_s;
        tasks += e.forward_tasks + e.backward_tasks;
        saved += e.saved;
      }
      if (v == total_virtual - 1) {
        const LayerCost& o = boundary(m, costs, shape, true);
        work += o.forward_s + o.backward_s;
        tasks += o.forward_tasks + o.backward_tasks;
        saved += o.saved;
      }
      if (k == 0) first_chunk[static_cast<std::size_t>(stage)] = work;
    }
    per_micro[static_cast<std::size_t>(stage)] = work;
    tasks_per_micro[static_cast<std::size_t>(stage)] = tasks;
    const double activations =
        saved / static_cast<double>(chunks) * static_cast<double>(held[static_cast<std::size_t>(stage)]);
    memory = std::max(memory, static_cast<double>(workload::stage_static_memory(m, c, stage).total_bytes()) +
                                  activations);
  }
  // Two directions (DualPipe) run half the micro-batches through each chunk.
  const double runs = schedule.two_directions ? static_cast<double>(micro) / 2 : static_cast<double>(micro);
  // A stage's first kernel waits for the first micro-batch's forward through
  // the first chunks of the stages before it, and the last micro-batch's
  // backward must pass them after its last kernel (its first chunk's):
  // step ≥ m·T_b + Σ_{s<b} C_s, C_s the first chunk's forward and backward
  // (the whole stage, T_s, with one chunk a stage).
  const bool chain = schedule.chained;
  double time = 0, before = 0;
  for (std::size_t stage = 0; stage < per_micro.size(); ++stage) {
    time = std::max(time, runs * per_micro[stage] + (chain ? before : 0.0));
    before += first_chunk[stage];
  }
  for (const double k : tasks_per_micro) time = std::max(time, runs * k * c.host_overhead_s);
  return {time, memory};
}

}  // namespace ptsim::plan::internal

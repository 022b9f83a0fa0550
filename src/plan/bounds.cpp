// Lower bounds on step time and peak memory (see internal/bounds.hpp).
#include "internal/bounds.hpp"

#include <algorithm>
#include <vector>

#include "ptsim/cost/compute_cost.hpp"
#include "ptsim/strategy/rank_layout.hpp"
#include "ptsim/strategy/pipeline_schedule.hpp"
#include "ptsim/strategy/quantization.hpp"
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

// A task whose issue costs the host its time: a kernel or communication
// call a CUDA graph does not replay (a replay's first task counts, as the
// cost model charges it).
bool host_issues(const workload::OpSpec& op) {
  return (is_kernel(op) || is_comm(op)) && op.host_issue != taskgraph::HostIssue::InGraph;
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
  std::optional<LayerCost>& memo = costs.layers[workload::layer_kind(m, shape, index)];
  {
    const std::lock_guard lock(mutex_);
    if (memo) return *memo;
  }
  const workload::BlockOps ops = workload::transformer_layer_ops(m, workload::decoder_layer_shape(shape, index), index);
  LayerCost cost;
  for (std::size_t i = 0; i < ops.forward.size(); ++i) {
    const auto& op = ops.forward[i];
    if (is_kernel(op)) cost.forward_s += cost::compute_seconds(hw_, workload::kernel_task(op), cost::Load::Sustained);
    if (host_issues(op)) ++cost.forward_tasks;
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
    if (host_issues(op)) ++cost.backward_tasks;
  }
}

const std::vector<double>& Bounds::ring_hops(const strategy::ParallelConfig& c, std::uint64_t bytes) {
  const LayoutKey key = layout_key(c, bytes);
  {
    const std::lock_guard lock(mutex_);
    if (const auto it = ring_hops_.find(key); it != ring_hops_.end()) return it->second;
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
  std::vector<double> hops(ring.size());
  for (std::size_t i = 0; i < ring.size(); ++i) {
    const taskgraph::Communicator pair{{ring[(i + ring.size() - 1) % ring.size()], ring[i]}, std::nullopt};
    hops[i] = std::max(0.0, cost_.communication_plan(transfer, pair).estimated_s - 1e-9);
  }
  const std::lock_guard lock(mutex_);
  return ring_hops_.emplace(key, std::move(hops)).first->second;
}

// Ring attention (workload's ring_attention) on rank r of a ring of n:
// step j's kernel waits for the block its receive j − 1 brings; receive j
// is posted once receive j − 1 is done (one receive stream, in order); its
// transfer starts once the sender posts the matching send, which forwards
// the block the sender's receive j − 1 brought (its first send: its own
// block, after the kernel before the ring) and follows its send j − 1 (one
// send stream, whose transfer is receive j − 1 of r). With 0 the earliest
// time any rank of the ring issued its first send, receive j into r ends at
//   F(r, j) ≥ max(F(r, j − 1), F(r − 1, j − 1)) + h(r),  F(r, 0) ≥ h(r),
// h(r) the hop into r alone, and r's ring ends at max_j F(r, j − 1) + the
// steps from j on (F(r, −1) = 0: its first step starts after its own first
// send may go). The earliest rank's next ring starts no sooner than the
// least of these over r after this ring started.
double Bounds::ring_hold_seconds(const strategy::ParallelConfig& c, std::uint64_t bytes,
                                 const std::vector<double>& steps) {
  const std::vector<double>& hops = ring_hops(c, bytes);
  auto key = std::make_pair(layout_key(c, bytes), steps);
  {
    const std::lock_guard lock(mutex_);
    if (const auto it = ring_hold_.find(key); it != ring_hold_.end()) return it->second;
  }
  const std::size_t n = hops.size();
  // after[j]: the steps j … n − 1, the time a rank's ring needs once step j may start.
  std::vector<double> after(steps.size() + 1, 0.0);
  for (std::size_t j = steps.size(); j-- > 0;) after[j] = after[j + 1] + steps[j];
  std::vector<double> arrived(n, 0.0), next(n);  // F(·, j − 1), then F(·, j)
  std::vector<double> ends(n, after[0]);
  for (std::size_t j = 1; j < steps.size(); ++j) {
    for (std::size_t r = 0; r < n; ++r)
      next[r] = (j == 1 ? 0.0 : std::max(arrived[r], arrived[(r + n - 1) % n])) + hops[r];
    arrived.swap(next);
    for (std::size_t r = 0; r < n; ++r) ends[r] = std::max(ends[r], arrived[r] + after[j]);
  }
  const double hold = *std::min_element(ends.begin(), ends.end());
  const std::lock_guard lock(mutex_);
  return ring_hold_.emplace(std::move(key), hold).first->second;
}

// Over rank 0's data-parallel group, its CP and DP ranks as the workload's
// communicators list them (every group repeats its tiers).
double Bounds::data_parallel_seconds(const strategy::ParallelConfig& c, taskgraph::CollectiveKind kind,
                                     std::uint64_t bytes) {
  const auto key = std::make_tuple(layout_key(c, bytes), kind);
  {
    const std::lock_guard lock(mutex_);
    if (const auto it = collective_alone_.find(key); it != collective_alone_.end()) return it->second;
  }
  const strategy::RankLayout layout(c.tp, c.cp, 1, c.dp, c.pp, c.rank_order);
  taskgraph::Task task;
  task.kind = taskgraph::TaskKind::Collective;
  task.collective = kind;
  task.bytes = bytes;
  const taskgraph::Communicator group{layout.group(0, {strategy::Axis::Cp, strategy::Axis::Dp}), std::nullopt};
  const double t = std::max(0.0, cost_.communication_plan(task, group).estimated_s - 1e-9);
  const std::lock_guard lock(mutex_);
  return collective_alone_.emplace(key, t).first->second;
}

double Bounds::buckets_seconds(const strategy::ParallelConfig& c, taskgraph::CollectiveKind kind,
                               std::int64_t parameters, std::int64_t bucket, double bytes_per_parameter) {
  const auto alone = [&](std::int64_t n) {
    return data_parallel_seconds(c, kind, static_cast<std::uint64_t>(bytes_per_parameter * static_cast<double>(n)));
  };
  if (parameters <= 0) return 0;
  const std::int64_t full = parameters / bucket;
  return static_cast<double>(full) * alone(bucket) + (parameters % bucket > 0 ? alone(parameters % bucket) : 0.0);
}

// Megatron-LM's DDP reduces a stage's gradients in buckets on its DP
// stream, one after another (workload's data_parallel): without
// --overlap-grad-reduce (and below ZeRO-2) all of them after its last
// backward; otherwise each as it fills during the last micro-batch's
// backward, the last one after that backward, holding at least the word
// embedding's gradients, which stage 0's backward makes last. Without
// --overlap-param-gather a ZeRO-1/2 rank then gathers the updated
// parameters after the optimizer, on the same stream (step_end). Stage 0's
// last kernel is the last micro-batch's backward through its first chunk,
// which ends no sooner than the chain of a chained schedule: these follow
// it. Expert parameters (their own group) and the optimizer are left out,
// as are HSDP and FSDP.
double Bounds::data_parallel_tail_seconds(const model::ModelSpec& m, const strategy::ParallelConfig& c) {
  if (c.fsdp() || c.zero_stage >= 3 || c.dp_shard > 0 || c.gradient_group() <= 1) return 0;
  const workload::RankParameters stage = workload::stage_parameters(m, c, 0);
  const std::int64_t bucket = workload::bucket_parameters(c);
  const taskgraph::CollectiveKind reduce =
      c.zero_stage >= 1 ? taskgraph::CollectiveKind::ReduceScatter : taskgraph::CollectiveKind::AllReduce;
  double tail = 0;
  if (c.zero_stage <= 1 && !c.overlap_grad_reduce) {
    tail += buckets_seconds(c, reduce, stage.dense, bucket, c.gradient_bytes());
  } else {
    // A bucket at least the embedding's, alone: no bucket splits it (one
    // flushes once it holds the bucket size or more), and a collective of
    // more bytes takes no less time.
    const auto embedding = static_cast<std::uint64_t>(workload::embedding_parameters_per_rank(m, c.tp));
    tail += data_parallel_seconds(c, reduce, c.gradient_bytes() * embedding);
  }
  if (c.zero_stage >= 1 && !c.overlap_param_gather) {
    // Under fp8 parameter gathering the layers' parameters are gathered in
    // their own buffer at the format's bytes, the rest in bf16.
    const strategy::Quantization q = strategy::quantization_of(c);
    const std::int64_t quantized = c.fp8_param_gather && q.param_gather_quantized()
                                       ? workload::stage_quantized_layer_parameters(m, c, 0).dense
                                       : 0;
    tail += buckets_seconds(c, taskgraph::CollectiveKind::AllGather, quantized, bucket, q.param_gather_bytes) +
            buckets_seconds(c, taskgraph::CollectiveKind::AllGather, stage.dense - quantized, bucket, 2.0);
  }
  return tail;
}

// The ring attention of `ops`, if it has one of cp blocks: its steps are the
// attention kernels from its first send on.
Bounds::LayerCost::Ring Bounds::ring_of(const std::vector<workload::OpSpec>& ops, std::int64_t cp) const {
  LayerCost::Ring ring;
  if (cp < 2) return ring;
  std::int64_t sends = 0;
  for (const auto& op : ops) {
    if (op.group == workload::CommGroup::ContextParallel && op.kind == workload::OpKind::Send) {
      ring.bytes = op.bytes;
      ++sends;
    }
    if (op.kind == workload::OpKind::Attention && sends > 0)
      ring.steps.push_back(cost::compute_seconds(hw_, workload::kernel_task(op), cost::Load::Sustained));
  }
  if (sends + 1 != cp || ring.steps.size() != static_cast<std::size_t>(cp)) return {};  // not one ring of cp blocks
  return ring;
}

double Bounds::ring_wait_seconds(const LayerCost::Ring& ring, const strategy::ParallelConfig& c) {
  if (ring.bytes == 0) return 0;
  double steps = 0;
  for (const double s : ring.steps) steps += s;
  return std::max(0.0, ring_hold_seconds(c, ring.bytes, ring.steps) - steps);
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
    if (host_issues(op)) ++cost.forward_tasks;
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
  // The rings' waits of each kind of layer, once per candidate.
  struct RingWaits {
    const LayerCost* layer = nullptr;
    double forward = 0, backward = 0;
  };
  std::vector<RingWaits> waits_by_layer;
  const auto ring_waits = [&](const LayerCost& lc) -> RingWaits {
    for (const RingWaits& w : waits_by_layer)
      if (w.layer == &lc) return w;
    return waits_by_layer.emplace_back(
        RingWaits{&lc, ring_wait_seconds(lc.forward_ring, c), ring_wait_seconds(lc.backward_ring, c)});
  };
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
        const RingWaits waits = ring_waits(lc);
        const double ring_wait = one_lane ? waits.forward * (recomputed ? 2 : 1) + waits.backward : 0;
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
  if (chain && one_lane) time += data_parallel_tail_seconds(m, c);
  // Inside a full-iteration CUDA graph the host issues nothing one by one.
  if (c.cuda_graph_impl != strategy::CudaGraphImpl::FullIteration)
    for (const double k : tasks_per_micro) time = std::max(time, runs * k * c.host_overhead_s);
  return {time, memory};
}

}  // namespace ptsim::plan::internal

// Layer and boundary blocks, memoised (see internal/layer_blocks.hpp).
#include "internal/layer_blocks.hpp"

#include <fmt/format.h>

#include <utility>

#include "ptsim/common/error.hpp"
#include "ptsim/workload/boundary_ops.hpp"
#include "ptsim/workload/step_workload.hpp"

namespace ptsim::workload::internal {

namespace {

bool is_comm(const OpSpec& op) {
  return op.kind == OpKind::Collective || op.kind == OpKind::Send || op.kind == OpKind::Recv;
}

// The ops of `ops` that `keep` selects, with OpSpec::after renumbered (and
// dropped when its target is gone). A communication op whose result the op
// after next consumed waits for the next kernel instead when the op in
// between is gone.
template <typename Keep>
std::vector<OpSpec> select(const std::vector<OpSpec>& ops, Keep keep) {
  std::vector<int> index(ops.size(), -1);
  std::vector<OpSpec> out;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!keep(ops[i])) continue;
    index[i] = static_cast<int>(out.size());
    OpSpec op = ops[i];
    if (op.after >= 0) op.after = index[static_cast<std::size_t>(op.after)];
    if (op.async) {
      // The kernel that ran beside it in the full list.
      std::size_t next = i + 1;
      while (next < ops.size() && is_comm(ops[next])) ++next;
      if (next < ops.size() && !keep(ops[next])) op.async = false;
    }
    out.push_back(op);
  }
  return out;
}

// The index of the exchange `name` in `ops`, or -1.
int exchange_index(const std::vector<OpSpec>& ops, const char* name) {
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind == OpKind::Collective && ops[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

LayerBlocks::LayerBlocks(const model::ModelSpec& m, const strategy::ParallelConfig& c, const MicroShape& shape,
                         ProgramBuilder& out, std::function<std::uint64_t(std::int64_t)> release_bytes)
    : m_(m),
      c_(c),
      shape_(shape),
      out_(out),
      release_bytes_(std::move(release_bytes)),
      embedding_(embedding_ops(m, shape)),
      output_(last_stage_ops(m, shape)) {}

const LayerLists& LayerBlocks::lists(std::int64_t layer) {
  const std::string key = layer_kind_key(m_, shape_, layer);
  auto it = lists_.find(key);
  if (it != lists_.end()) return it->second;
  LayerLists l;
  l.ops = transformer_layer_ops(m_, decoder_layer_shape(shape_, layer), layer);
  l.input_backward = select(l.ops.backward, [](const OpSpec& op) { return !op.weight_grad; });
  l.weight_backward = select(l.ops.backward, [](const OpSpec& op) { return op.weight_grad; });
  for (auto& op : l.weight_backward) op.async = false;  // the W GEMM itself consumes it
  const strategy::RecomputeModules modules = selective();
  l.recomputed = select(l.ops.forward, [modules](const OpSpec& op) { return (op.rerun_by & modules) != 0; });
  for (const OpSpec& op : l.ops.forward) l.dropped_bytes += op.dropped_bytes(modules);
  PTSIM_ASSERT(l.dropped_bytes == 0 || !l.recomputed.empty(), "what a layer drops, a rerun makes again");
  // A graphed region's rerun, or a split backward's part, replays it again.
  if (shape_.graph_regions)
    for (std::vector<OpSpec>* part : {&l.input_backward, &l.weight_backward, &l.recomputed})
      mark_graph_replays(*part, shape_.graph_regions);
  if (op_checkpointing()) {
    // torchtitan's policy (parallelize_llama.py _save_list and
    // _custom_policy at 9dec370): every aten.mm output but every second one
    // (by their count in the layer), and the flash-attention kernel's
    // outputs (O and its row log-sum-exp), are kept; the rest reruns.
    int gemms = 0;
    std::vector<bool> kept(l.ops.forward.size(), false);
    for (std::size_t i = 0; i < l.ops.forward.size(); ++i) {
      const OpSpec& op = l.ops.forward[i];
      const double rows = static_cast<double>(op.shape[0]) * op.shape[1];
      std::uint64_t out = 0;
      if (op.kind == OpKind::Matmul && ++gemms % 2 == 1) out = as_bytes(2 * rows * op.shape[3]);
      if (op.kind == OpKind::Attention) out = as_bytes(2 * rows * op.shape[3] + 4 * rows);  // O, bf16; fp32 LSE
      kept[i] = op.kind == OpKind::Attention || out > 0;
      l.op_kept.push_back(out);
      l.op_cache_bytes += out;
    }
    const OpSpec* first = l.ops.forward.data();
    l.op_rerun = select(l.ops.forward, [&](const OpSpec& op) { return !kept[static_cast<std::size_t>(&op - first)]; });
  }
  return lists_.emplace(key, std::move(l)).first->second;
}

// A backward part's kind: one each for freeing the gathered parameters and
// keeping them.
LayerBlocks::LayerBlock LayerBlocks::backward_kind(strategy::Pass part, bool release_gathered) {
  switch (part) {
    case strategy::Pass::Backward: return release_gathered ? LayerBlock::FullBackward : LayerBlock::FullBackwardKept;
    case strategy::Pass::BackwardInput:
      return release_gathered ? LayerBlock::BackwardInput : LayerBlock::BackwardInputKept;
    case strategy::Pass::BackwardWeight:
      return release_gathered ? LayerBlock::BackwardWeightRelease : LayerBlock::BackwardWeight;
    case strategy::Pass::Forward: break;
  }
  PTSIM_ASSERT(false, "a backward block of a backward pass");
  return LayerBlock::FullBackward;
}

// A layer's block of one kind (forward, backward part, recomputation) is
// made once per lane; every micro-batch then instantiates it by layer, kind
// and lane without formatting its key again (that was a tenth of a symmetric run).
template <typename Make>
std::uint32_t LayerBlocks::memo_block(std::int64_t layer, LayerBlock kind, Make make) {
  PTSIM_ASSERT(out_.lane() >= 0 && static_cast<std::uint64_t>(out_.lane()) < kLanes, "a lane DualPipe's pairs have");
  const auto key = (static_cast<std::uint64_t>(layer) * static_cast<std::uint64_t>(LayerBlock::Count) +
                    static_cast<std::uint64_t>(kind)) *
                       kLanes +
                   static_cast<std::uint64_t>(out_.lane());
  if (const auto it = layer_blocks_.find(key); it != layer_blocks_.end()) return it->second;
  const std::uint32_t block = make();
  layer_blocks_.emplace(key, block);
  return block;
}

// A list of ops as one block; `alloc(i)` / `free(i)` give each op's memory.
template <typename Alloc, typename Free>
std::uint32_t LayerBlocks::ops_block(const std::string& key, const std::vector<OpSpec>& ops, const std::string& prefix,
                                     std::uint8_t category, Alloc alloc, Free free) {
  return out_.block(key, [&](BlockRecorder& b) {
    const auto names = b.names_of(ops, prefix);
    b.begin_list();
    for (std::size_t i = 0; i < ops.size(); ++i) b.emit(ops[i], names[i], category, alloc(i), free(i));
  });
}

// Forward ops of a layer kind. Under full recomputation only the layer
// input (what the first op saves) stays allocated; under selective
// recomputation the ops keep what the recomputed modules do not drop; a
// ZeRO-3 layer releases its gathered parameters at its end.
std::uint32_t LayerBlocks::layer_forward(std::int64_t layer, bool checkpoint) {
  return memo_block(layer, checkpoint ? LayerBlock::ForwardCheckpointed : LayerBlock::Forward,
                    [&] { return make_layer_forward(layer, checkpoint); });
}
std::uint32_t LayerBlocks::make_layer_forward(std::int64_t layer, bool checkpoint) {
  const auto& l = lists(layer);
  // A block FSDP does not reshard keeps its gathered parameters to its backward.
  const std::uint64_t release = c_.reshards_after_forward(layer, m_.num_layers) ? release_bytes_(layer) : 0;
  const bool op = checkpoint && op_checkpointing();
  const std::string key = fmt::format("layer.fwd.{}{}{}", layer_kind_key(m_, shape_, layer),
                                      op            ? ".op_checkpoint"
                                      : checkpoint  ? ".checkpoint"
                                      : selective() ? ".selective"
                                                    : "",
                                      release ? ".zero3" : "");
  const auto& ops = l.ops.forward;
  return ops_block(
      key, ops, "fwd.", categories::kForward,
      [&](std::size_t i) -> std::uint64_t {
        if (op) return (i == 0 ? checkpoint_bytes() : 0) + l.op_kept[i];
        if (checkpoint) return i == 0 ? checkpoint_bytes() : 0;
        return ops[i].kept_bytes(selective());
      },
      [&](std::size_t i) -> std::uint64_t { return i + 1 == ops.size() ? release : 0; });
}

// `part`: a full backward, or the B or W of a zero-bubble split.
std::uint32_t LayerBlocks::layer_backward(std::int64_t layer, strategy::Pass part, bool release_gathered) {
  return memo_block(layer, backward_kind(part, release_gathered),
                    [&] { return make_layer_backward(layer, part, release_gathered); });
}
std::uint32_t LayerBlocks::make_layer_backward(std::int64_t layer, strategy::Pass part, bool release_gathered) {
  using strategy::Pass;
  const auto& l = lists(layer);
  const bool weight = part == Pass::BackwardWeight;
  const auto& ops = part == Pass::Backward        ? l.ops.backward
                    : part == Pass::BackwardInput ? l.input_backward
                                                  : l.weight_backward;
  const std::uint64_t release = release_gathered ? release_bytes_(layer) : 0;
  const char* name = part == Pass::Backward ? "bwd" : part == Pass::BackwardInput ? "bwd_input" : "bwd_weight";
  const std::string key =
      fmt::format("layer.{}.{}{}", name, layer_kind_key(m_, shape_, layer), release ? ".zero3" : "");
  return ops_block(
      key, ops, weight ? "bwd_weight." : "bwd.", categories::kBackward, [](std::size_t) { return std::uint64_t{0}; },
      [&](std::size_t i) { return ops[i].released_bytes(selective()) + (i + 1 == ops.size() ? release : 0); });
}

// The recomputed forward: every op but the checkpointed input (full), or
// the recomputed modules' ops (selective), allocating again what the
// forward dropped (at the rerun's end: the backward that frees it follows).
std::uint32_t LayerBlocks::layer_recompute(std::int64_t layer, bool full) {
  return memo_block(layer, full ? LayerBlock::Recompute : LayerBlock::RecomputeSelective,
                    [&] { return make_layer_recompute(layer, full); });
}
std::uint32_t LayerBlocks::make_layer_recompute(std::int64_t layer, bool full) {
  const auto& l = lists(layer);
  const bool op = full && op_checkpointing();
  const auto& ops = op ? l.op_rerun : full ? l.ops.forward : l.recomputed;
  const std::string key = fmt::format("layer.recompute{}.{}",
                                      op     ? "_op"
                                      : full ? ""
                                             : "_selective",
                                      layer_kind_key(m_, shape_, layer));
  // What the backward frees beyond the kept input: under full recomputation
  // the first op's saves less that input (nothing more where the first op
  // keeps just it, a fused norm; eager's keeps its fp32 copy), then each op's.
  const std::uint64_t input = checkpoint_bytes();
  PTSIM_ASSERT(!full || l.ops.forward.front().saved_bytes >= input, "a layer's first op keeps at least its input");
  std::uint64_t all = 0;
  if (op)
    for (const OpSpec& o : l.ops.forward) all += o.saved_bytes;
  return ops_block(
      key, ops, "recompute.", categories::kRecompute,
      [&](std::size_t i) -> std::uint64_t {
        if (op) return i == 0 ? all - input : 0;  // the kept GEMM outputs' own saves too
        if (full) return i == 0 ? ops[0].saved_bytes - input : ops[i].saved_bytes;
        return i + 1 == ops.size() ? l.dropped_bytes : 0;
      },
      [&](std::size_t i) -> std::uint64_t { return op && i + 1 == ops.size() ? l.op_cache_bytes : 0; });
}

std::uint32_t LayerBlocks::boundary_block(const std::string& key, const std::vector<OpSpec>& ops,
                                          const std::string& prefix, std::uint8_t category, bool forward) {
  return ops_block(
      key, ops, prefix, category, [&](std::size_t i) { return forward ? ops[i].saved_bytes : 0; },
      [&](std::size_t i) { return forward ? 0 : ops[i].freed_bytes; });
}

// The embedding's and the output layer's block for `part` of a step.
std::uint32_t LayerBlocks::embedding_block(strategy::Pass part) {
  if (part == strategy::Pass::Forward)
    return boundary_block("embedding.fwd", embedding_.forward, "fwd.", categories::kForward, true);
  return backward_part("embedding", embedding_.backward, part);
}
std::uint32_t LayerBlocks::output_block(strategy::Pass part) {
  if (part == strategy::Pass::Forward)
    return boundary_block("output.fwd", output_.forward, "fwd.", categories::kForward, true);
  return backward_part("output", output_.backward, part);
}
std::uint32_t LayerBlocks::backward_part(const std::string& what, const std::vector<OpSpec>& ops, strategy::Pass part) {
  if (part == strategy::Pass::Backward) return boundary_block(what + ".bwd", ops, "bwd.", categories::kBackward, false);
  const bool weight = part == strategy::Pass::BackwardWeight;
  std::vector<OpSpec> selected = select(ops, [&](const OpSpec& op) { return op.weight_grad == weight; });
  if (weight)
    for (auto& op : selected) op.async = false;
  return boundary_block(what + (weight ? ".bwd_weight" : ".bwd_input"), selected, weight ? "bwd_weight." : "bwd.",
                        categories::kBackward, false);
}

// A layer's ops by schedule node (LayerNode). Forward: everything before
// the dispatch exchange and the shared experts (shared_experts_compute runs
// in submodule_pre_dispatch_forward) pre-dispatch, the exchange, the ops
// between the two exchanges (the routed experts), the combine exchange and
// what follows it (MoELayer.postprocess and the residual: submodule_combine
// _forward). Backward: the combine node's kernels and its exchange, the
// experts' input gradients (and their weight gradients when not deferred),
// the experts' deferred weight gradients (mlp.backward_dw), the dispatch
// exchange, the rest (pre-dispatch), and under delay_wgrad_compute its
// Transformer Engine linears' weight gradients (backward_dw_wrapper: the
// attention's and the shared experts'; the router's weight gradient is
// autograd's and stays).
const std::array<std::vector<OpSpec>, kLayerNodes>& LayerBlocks::node_lists(std::int64_t layer) {
  const std::string key = layer_kind_key(m_, shape_, layer);
  if (const auto it = node_lists_.find(key); it != node_lists_.end()) return it->second;
  const LayerLists& l = lists(layer);
  const auto& fw = l.ops.forward;
  const auto& bw = l.ops.backward;
  const int d = exchange_index(fw, "moe.dispatch"), c = exchange_index(fw, "moe.combine");
  const int cb = exchange_index(bw, "moe.combine.bwd"), db = exchange_index(bw, "moe.dispatch.bwd");
  const bool moe = d >= 0 && c > d && cb >= 0 && db > cb;
  const bool delay = shape_.delay_wgrad_compute;
  const auto shared = [](const OpSpec& op) { return op.name.starts_with("moe.shared"); };
  const auto deferred = [&](const OpSpec& op) { return delay && op.weight_grad && !op.name.starts_with("moe.router"); };
  const auto forward_node = [&](int i, const OpSpec& op) {
    if (!moe || i < d || shared(op)) return LayerNode::PreDispatch;
    if (i == d) return LayerNode::Dispatch;
    if (i < c) return LayerNode::Mlp;
    return i == c ? LayerNode::Combine : LayerNode::CombinePost;
  };
  const auto backward_node = [&](int i, const OpSpec& op) {
    if (!moe || shared(op) || i > db) {
      if (moe && i > db && op.weight_grad && op.name.starts_with("moe.experts")) return LayerNode::MlpDw;
      return deferred(op) ? LayerNode::PreDispatchDw : LayerNode::PreDispatchBwd;
    }
    if (i < cb) return LayerNode::CombineBwdPre;
    if (i == cb) return LayerNode::CombineBwd;
    return i < db ? LayerNode::MlpBwd : LayerNode::DispatchBwd;
  };
  std::array<std::vector<OpSpec>, kLayerNodes> nodes;
  for (std::size_t n = 0; n < kLayerNodes; ++n) {
    const auto node = static_cast<LayerNode>(n);
    const bool forward = node <= LayerNode::CombinePost;
    const auto& ops = forward ? fw : bw;
    const OpSpec* first = ops.data();
    nodes[n] = select(ops, [&](const OpSpec& op) {
      const int i = static_cast<int>(&op - first);
      return (forward ? forward_node(i, op) : backward_node(i, op)) == node;
    });
    // The nodes' order and the lanes' chains say who waits for an exchange:
    // the next kernel of its micro-batch.
    for (OpSpec& op : nodes[n]) op.detached = false;
  }
  return node_lists_.emplace(key, std::move(nodes)).first->second;
}

std::optional<std::uint32_t> LayerBlocks::layer_node(std::int64_t layer, LayerNode node) {
  const auto n = static_cast<std::int64_t>(node);
  const auto key = std::pair{layer * static_cast<std::int64_t>(kLayerNodes) + n, out_.lane()};
  if (const auto it = node_blocks_.find(key); it != node_blocks_.end()) return it->second;
  const auto& ops = node_lists(layer)[static_cast<std::size_t>(n)];
  std::optional<std::uint32_t> block;
  if (!ops.empty()) {
    const std::string name = fmt::format("layer.node{}.{}", n, layer_kind_key(m_, shape_, layer));
    if (node <= LayerNode::CombinePost) {
      block = ops_block(
          name, ops, "fwd.", categories::kForward, [&](std::size_t i) { return ops[i].kept_bytes(selective()); },
          [](std::size_t) { return std::uint64_t{0}; });
    } else {
      block = ops_block(
          name, ops, "bwd.", categories::kBackward, [](std::size_t) { return std::uint64_t{0}; },
          [&](std::size_t i) { return ops[i].released_bytes(selective()); });
    }
  }
  node_blocks_.emplace(key, block);
  return block;
}

bool LayerBlocks::recompute_in_mlp(std::int64_t layer) {
  for (const OpSpec& op : lists(layer).recomputed)
    if (op.name.starts_with("moe.experts")) return true;
  return false;
}

}  // namespace ptsim::workload::internal

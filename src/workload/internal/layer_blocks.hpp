// The blocks of a stage's layers and of its embedding and output layer,
// each kind made once (per DualPipe lane) and then instantiated per
// micro-batch: a layer's forward (kept whole, or only its input under full
// recomputation, or less what the selectively recomputed modules drop),
// its backward (whole, or the B and W of a zero-bubble split), and its
// recomputed forward. Private to workload/.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "internal/program_builder.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/strategy/parallel_config.hpp"
#include "ptsim/strategy/pipeline_schedule.hpp"
#include "ptsim/workload/layer_ops.hpp"
#include "ptsim/workload/op_spec.hpp"

namespace ptsim::workload::internal {

// The op lists of one kind of layer.
struct LayerLists {
  BlockOps ops;                         // forward, full backward
  std::vector<OpSpec> input_backward;   // B of a zero-bubble split
  std::vector<OpSpec> weight_backward;  // W
  std::vector<OpSpec> recomputed;       // what selective recomputation reruns (the run's modules)
  /// torchtitan's selective op checkpointing: the forward ops it reruns (all
  /// but every other GEMM and attention, whose outputs it keeps), and what
  /// each forward op keeps under it.
  std::vector<OpSpec> op_rerun;
  std::vector<std::uint64_t> op_kept;
  std::uint64_t op_cache_bytes = 0;     // the kept outputs, freed once the rerun has used them
  std::uint64_t dropped_bytes = 0;      // what the forward does not keep under it, made again by the rerun
};

/// Megatron-Core's combined 1F1B runs a layer as schedule nodes
/// (TransformerLayerSchedulePlan over build_transformer_layer_callables,
/// models/common/model_chunk_schedule_plan.py and
/// models/gpt/fine_grained_callables.py at d98e8a64dd): forward
/// pre-dispatch (attention, pre-MLP norm, shared experts, router,
/// permutation), dispatch (the exchange), MLP (the routed experts), combine
/// (the exchange, then unpermutation and residual: CombinePost); backward
/// the same in reverse, with the weight gradients that delay_wgrad_compute
/// defers (the experts' after the MLP's backward, the rest of the layer's
/// after the pre-dispatch backward) as nodes of their own. A dense layer is
/// one pre-dispatch node each way.
enum class LayerNode : std::uint8_t {
  PreDispatch,
  Dispatch,
  Mlp,
  Combine,
  CombinePost,
  CombineBwdPre,  // the combine node's backward kernels before its exchange
  CombineBwd,
  MlpBwd,
  MlpDw,
  DispatchBwd,
  PreDispatchBwd,
  PreDispatchDw,
  Count,
};
inline constexpr std::size_t kLayerNodes = static_cast<std::size_t>(LayerNode::Count);

class LayerBlocks {
 public:
  /// `release_bytes(layer)`: the gathered parameters a ZeRO-3 layer frees at
  /// the end of its forward and of its backward (0 without ZeRO-3).
  LayerBlocks(const model::ModelSpec& m, const strategy::ParallelConfig& c, const MicroShape& shape,
              ProgramBuilder& out, std::function<std::uint64_t(std::int64_t)> release_bytes);

  const LayerLists& lists(std::int64_t layer);

  /// Forward ops of a layer kind. Under full recomputation (`checkpoint`)
  /// only the layer input (what the first op saves) stays allocated; under
  /// selective recomputation the ops keep what the recomputed modules do
  /// not drop (OpSpec::kept_bytes); a ZeRO-3 layer releases its gathered
  /// parameters at its end.
  std::uint32_t layer_forward(std::int64_t layer, bool checkpoint);
  /// `part`: a full backward, or the B or W of a zero-bubble split; with
  /// `release_gathered` a ZeRO-3 layer's block frees its gathered
  /// parameters at its end (the caller says which block is the last to use
  /// them: FSDP2 under pipeline parallelism keeps them to the step's last
  /// backward, ParallelConfig::fsdp_gathers_once_a_step, and under a
  /// zero-bubble split that is its last W).
  std::uint32_t layer_backward(std::int64_t layer, strategy::Pass part, bool release_gathered);
  /// The recomputed forward: every op but the checkpointed input (full), or
  /// the recomputed modules' ops (selective), allocating again what the
  /// forward dropped.
  std::uint32_t layer_recompute(std::int64_t layer, bool full);
  /// The block of `node` of a layer (forward nodes keep what their ops save,
  /// backward ones free what theirs free), or none where the layer has no
  /// such node.
  std::optional<std::uint32_t> layer_node(std::int64_t layer, LayerNode node);
  /// Whether the layer's selectively recomputed ops rerun within its MLP's
  /// backward (the routed experts' activation, "moe_act") rather than its
  /// pre-dispatch backward.
  bool recompute_in_mlp(std::int64_t layer);

  /// A list of ops as one block: forward ones keep what they save, backward
  /// ones free what they free.
  std::uint32_t boundary_block(const std::string& key, const std::vector<OpSpec>& ops, const std::string& prefix,
                               std::uint8_t category, bool forward);
  /// The embedding's and the output layer's block for `part` of a step.
  std::uint32_t embedding_block(strategy::Pass part);
  std::uint32_t output_block(strategy::Pass part);

 private:
  // The kinds of a layer's blocks, and the lanes they are made for.
  enum class LayerBlock : std::uint8_t {
    Forward,
    ForwardCheckpointed,  // full recomputation: only the layer input kept
    FullBackward,
    BackwardInput,          // B of a zero-bubble split
    BackwardWeight,         // W of a zero-bubble split
    FullBackwardKept,       // a full backward that keeps the gathered parameters
    BackwardInputKept,      // a B that keeps them
    BackwardWeightRelease,  // a W that frees them (FSDP2's last under pipeline parallelism)
    Recompute,              // full recomputation's rerun forward
    RecomputeSelective,
    Count,
  };
  static constexpr std::uint64_t kLanes = 2;  // DualPipe's overlapped pair: lanes 0 and 1
  static LayerBlock backward_kind(strategy::Pass part, bool release_gathered);

  template <typename Make>
  std::uint32_t memo_block(std::int64_t layer, LayerBlock kind, Make make);
  template <typename Alloc, typename Free>
  std::uint32_t ops_block(const std::string& key, const std::vector<OpSpec>& ops, const std::string& prefix,
                          std::uint8_t category, Alloc alloc, Free free);
  std::uint32_t make_layer_forward(std::int64_t layer, bool checkpoint);
  std::uint32_t make_layer_backward(std::int64_t layer, strategy::Pass part, bool release_gathered);
  std::uint32_t make_layer_recompute(std::int64_t layer, bool full);
  std::uint32_t backward_part(const std::string& what, const std::vector<OpSpec>& ops, strategy::Pass part);
  strategy::RecomputeModules selective() const { return c_.selective_modules(); }

  // What full (and op) recomputation keeps of a layer: its input, bf16.
  std::uint64_t checkpoint_bytes() const {
    return as_bytes(2 * shape_.sp_tokens() * static_cast<double>(m_.hidden_size));
  }
  bool op_checkpointing() const { return c_.recompute == strategy::RecomputeKind::Op; }

  const model::ModelSpec& m_;
  const strategy::ParallelConfig& c_;
  const MicroShape& shape_;
  ProgramBuilder& out_;
  std::function<std::uint64_t(std::int64_t)> release_bytes_;
  BlockOps embedding_, output_;
  const std::array<std::vector<OpSpec>, kLayerNodes>& node_lists(std::int64_t layer);

  std::map<std::string, LayerLists> lists_;
  std::map<std::string, std::array<std::vector<OpSpec>, kLayerNodes>> node_lists_;
  std::map<std::pair<std::int64_t, int>, std::optional<std::uint32_t>> node_blocks_;  // by (layer · nodes + node, lane)
  std::unordered_map<std::uint64_t, std::uint32_t> layer_blocks_;  // by (layer, LayerBlock, lane): see memo_block
};

}  // namespace ptsim::workload::internal

// The ops Megatron-LM runs for one transformer layer on one rank, forward and
// backward, with their FLOP, HBM bytes, communication and saved tensors.
// The saved tensors follow Korthikanti et al. 2022 (§4.1–4.2.2), so that a GPT
// layer with dropout and TP t saves s·b·h·(10 + 24/t + 5·a·s/(h·t)) bytes with
// the unfused attention they analyse, s·b·h·(34 + 5·a·s/h)/t with sequence
// parallelism; fused (flash) attention keeps no s×s tensor and saves
// s·b·h·(10 + 24/t) (or 34/t) plus its softmax statistics. Context parallelism
// divides every token count by cp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "ptsim/common/dtype.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/strategy/parallel_config.hpp"
#include "ptsim/strategy/quantization.hpp"
#include "ptsim/workload/op_spec.hpp"

namespace ptsim::workload {

/// Shape of the work one rank does for one micro-batch.
/// The format a linear's GEMMs multiply in and how their operands are quantized.
struct LinearFormat {
  Dtype gemm_dtype = Dtype::Bf16;
  strategy::Quantization quantization;  // inactive under bf16
  friend bool operator==(const LinearFormat&, const LinearFormat&) = default;
};

struct MicroShape {
  std::int64_t micro_batch = 1;  // b, sequences
  std::int64_t seq_length = 1;   // s, tokens of a whole sequence
  std::int64_t tp = 1;           // t
  std::int64_t cp =
      1;  // the sequence is split over cp ranks (ring attention: Megatron-Core's, or PyTorch's with torch_modules())
  bool sequence_parallel = false;
  bool tp_comm_overlap = false;  // SP's gathers and scatters pipelined with their GEMMs
  /// Without SP: a column-parallel linear's input gradient is all-reduced
  /// beside its weight-gradient GEMM (false: the GEMMs after it wait, as
  /// Megatron-LM ran before September 2021). Under SP always beside it.
  bool async_tp_allreduce = true;
  /// Weight-gradient GEMMs accumulate into the main gradient (false: a
  /// gradient_accumulation_op follows each; ParallelConfig::gradient_accumulation_fusion).
  bool gradient_accumulation_fusion = true;
  strategy::LossKernel loss_kernel = strategy::LossKernel::Unfused;  // ParallelConfig::loss_kernel
  int main_grad_bytes = 4;       // bytes of a main-gradient element (ParallelConfig::gradient_bytes)
  /// Whether the TP reduction of an input gradient runs beside the GEMMs after it.
  bool async_dgrad_reduce() const { return sequence_parallel || async_tp_allreduce; }
  /// Which attention kernels (ParallelConfig::attention): the fused ones of a
  /// backend, or Megatron's unfused path.
  strategy::AttentionBackend attention = strategy::AttentionBackend::Flash;
  bool flash_attention() const { return attention != strategy::AttentionBackend::Unfused; }
  /// Fused kernels, or torchtitan's PyTorch modules eager or with compiled
  /// blocks (ParallelConfig::kernel_fusion).
  strategy::KernelFusion kernel_fusion = strategy::KernelFusion::Fused;
  bool torch_modules() const { return kernel_fusion != strategy::KernelFusion::Fused; }
  /// Under cp > 1 with those modules: how PyTorch's context parallelism moves
  /// keys and values (ParallelConfig::cp_rotate_method).
  strategy::CpRotateMethod cp_rotate_method = strategy::CpRotateMethod::AllGather;
  /// The layer weights arrive in fp8 from FSDP2's all-gather (torchao's
  /// float8 all-gather, ParallelConfig::fp8_param_gather under ZeRO-3).
  bool fp8_weights_gathered = false;
  Dtype gemm_dtype = Dtype::Bf16;       // the format the layers' linear GEMMs multiply in (ParallelConfig::gemm_dtype)
  Dtype attention_dtype = Dtype::Bf16;  // the format fused attention multiplies in (ParallelConfig::attention_dtype)
  strategy::Quantization quantization;  // how their operands are quantized (none under bf16)
  std::int64_t ep = 1;           // expert parallelism
  std::int64_t expert_tp = 1;    // tensor parallelism inside experts
  /// Tokens per expert as a multiple of an even share (padded to capacity); empty: dropless.
  std::optional<double> capacity_factor;
  /// The busiest EP rank's routed tokens over an even share
  /// (ParallelConfig::moe_load_imbalance); this rank is that one.
  double load_imbalance = 1.0;
  strategy::MoeDispatcher moe_dispatcher = strategy::MoeDispatcher::AllToAll;  // ParallelConfig::moe_dispatcher
  strategy::MoeFlexBackend moe_flex_backend = strategy::MoeFlexBackend::DeepEP;  // ParallelConfig::moe_flex_backend
  int moe_flex_num_sms = 0;                                                      // ParallelConfig::moe_flex_num_sms
  bool delay_wgrad_compute = false;  // experts' wgrad beside the backward dispatch (ParallelConfig's)
  /// Layer regions replayed from per-layer CUDA graphs
  /// (ParallelConfig::graph_captured_regions): their kernels cost the host
  /// nothing, each replay one task's time (OpSpec::host_issue).
  strategy::CudaGraphModules graph_regions = 0;
  /// The model's first and last layers kept in bf16 under fp8 or nvfp4
  /// (ParallelConfig::bf16_layer), of its num_layers.
  std::int64_t bf16_layers_at_start = 0;
  std::int64_t bf16_layers_at_end = 0;
  std::int64_t num_layers = 0;
  /// Modules whose linears run in a format of their own
  /// (ParallelConfig::module_precision), by strategy::LinearModule.
  std::array<std::optional<LinearFormat>, strategy::kLinearModules> module_formats{};
  const std::optional<LinearFormat>& format_of(strategy::LinearModule module) const {
    return module_formats[static_cast<std::size_t>(module)];
  }
  bool bf16_layer(std::int64_t layer) const {
    return quantization.active &&
           strategy::ParallelConfig::first_last_bf16_layer(layer, num_layers, bf16_layers_at_start, bf16_layers_at_end);
  }

  /// Tokens of one micro-batch on this rank: b·s/cp.
  double tokens() const { return static_cast<double>(micro_batch * seq_length) / static_cast<double>(cp); }
  /// Tokens in the sequence-parallel regions (norms, dropout, residual): tokens()/t under SP.
  double sp_tokens() const { return sequence_parallel ? tokens() / static_cast<double>(tp) : tokens(); }

  friend bool operator==(const MicroShape&, const MicroShape&) = default;
};

/// The shape of one micro-batch on a rank of `config` (what the layer ops of
/// the workload builder and of the planner's bounds are built from).
MicroShape micro_shape(const model::ModelSpec& m, const strategy::ParallelConfig& config);

/// Forward and backward ops of transformer layer `layer` (global index:
/// dense or MoE MLP, sliding-window or full attention). The first forward op
/// saves exactly the layer input, which is what full recomputation keeps
/// instead of everything else.
BlockOps transformer_layer_ops(const model::ModelSpec& m, const MicroShape& shape, std::int64_t layer);

/// The shape decoder layer `layer` runs in: `shape`, or for a layer kept in
/// bf16 (MicroShape::bf16_layer) the same without quantization, its GEMMs
/// and attention in bf16. (The MTP depths take mtp_layer_shape.)
MicroShape decoder_layer_shape(const MicroShape& shape, std::int64_t layer);
/// The shape an MTP depth's transformer layers run in: `shape` under FP8
/// (Megatron-Core runs them in the global FP8 context), bf16 under NVFP4
/// (it enters that context only when config.fp8 is set: "currently ignoring
/// FP4 in MTP layers", MultiTokenPredictionLayer.forward in
/// multi_token_prediction.py at d98e8a64dd), or where the run gives the MTP
/// depths a format of their own (module_precision `mtp`, Megatron-Core's
/// "mtp.*" matcher, which takes every module of the depth, its core
/// attention too, and overrides a non-quantized context) that format for all
/// of them.
MicroShape mtp_layer_shape(const MicroShape& shape);
/// An MTP depth's eh_proj, forward and backward: a column-parallel 2h → h
/// linear (its input gathered under SP, its output gathered over TP) in the
/// depth's format (mtp_layer_shape: quantized under FP8 with its casts and
/// kept copy, as Megatron-Core runs it inside the depth's FP8 context).
BlockOps mtp_projection_ops(const model::ModelSpec& m, const MicroShape& shape);

/// Layers of the same kind have the same ops: dense or MoE MLP, sliding or
/// full attention, or DeepSeek-V4's compressed or heavily compressed one; a hybrid model's Mamba, attention, MLP or MoE layer;
/// each quantized or kept in bf16. An index below kLayerKinds, and its name.
inline constexpr std::size_t kLayerKinds = 24;
std::size_t layer_kind(const model::ModelSpec& m, const MicroShape& shape, std::int64_t layer);
std::string layer_kind_key(const model::ModelSpec& m, const MicroShape& shape, std::int64_t layer);

/// FP8 GEMMs in a layer's forward (each casts its input, weight and output
/// gradient, and keeps amax histories for them). `separate_linears`:
/// torchtitan's modules, whose query, key and value projections and gated
/// MLP halves are linears of their own (dense layers only).
int fp8_gemms_per_layer(const model::ModelSpec& m, std::int64_t layer, bool separate_linears = false);

}  // namespace ptsim::workload

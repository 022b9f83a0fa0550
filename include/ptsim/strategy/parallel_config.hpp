// ParallelConfig: how the model is parallelised — Megatron-LM's knobs, already
// validated against each other (config/validate checks them against the model
// and the hardware too). Input stage of the flow.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>
#include <string>
#include <string_view>

#include "ptsim/common/dtype.hpp"
#include "ptsim/strategy/recompute_modules.hpp"

namespace ptsim::strategy {

enum class ScheduleKind {
  Naive,        // plain model parallelism: one micro-batch (the whole per-replica batch)
  GPipe,        // all forwards, then all backwards (Huang et al. 2019)
  OneFOneB,     // PipeDream-Flush as in Megatron-LM (Narayanan et al. 2021)
  Interleaved,  // interleaved 1F1B over v model chunks per stage (Narayanan et al. 2021 §2.2.2)
  ZbH1,         // zero bubble, 1F1B's memory: backward split into B and W (Qi et al. 2023)
  ZbH2,         // zero bubble, twice 1F1B's in-flight micro-batches
  DualPipe,     // DeepSeek-V3's bidirectional pipeline (DeepSeek-AI 2024, deepseek-ai/DualPipe)
};

enum class RecomputeKind {
  None,
  Selective,  // Megatron's selective recomputation of the modules in ParallelConfig::recompute_modules (default core attention: unfused, scores, softmax, dropout, context; fused, the attention kernel; ring attention under CP: the whole ring, its transfers included)
  Full,       // whole layers: only each layer's input is kept
  /// torchtitan's selective op checkpointing: each layer keeps its input and
  /// the outputs of every other GEMM and of attention; the rest reruns.
  Op,
};

/// How the layers' memory-bound ops run (--kernel-fusion).
enum class KernelFusion {
  Fused,     // Transformer Engine's and Megatron-Core's fused kernels
  Eager,     // torchtitan's PyTorch modules, one kernel an ATen op
  Compiled,  // the same modules, each transformer block under torch.compile
};

/// Which kernels compute the loss over the logits (workload/boundary_ops.cpp).
enum class LossKernel {
  Unfused,            // Megatron's eight kernels over fp32 logits, or torch's F.cross_entropy under torch modules
  TransformerEngine,  // Transformer Engine's fused parallel cross-entropy (--cross-entropy-loss-fusion)
  FlashAttn,          // flash-attn's fused cross-entropy (llm-foundry's loss_fn: fused_crossentropy)
};

/// How PyTorch's context parallelism passes each rank's keys and values
/// round the ring (torch.distributed.tensor.experimental._attention's
/// _RotateMethod; torchtitan's --experimental.context_parallel_rotate_method).
enum class CpRotateMethod {
  AllGather,  // one all-gather of every shard's K and V a pass (PyTorch's and torchtitan's default)
  AllToAll,   // each shard sent to the next rank before every step, as a ring
};

enum class AttentionBackend {
  Flash,    // fused attention kernels at the profile's FlashAttention efficiency
  Unfused,  // QKᵀ, softmax, dropout and PV as separate kernels (Megatron-LM 2021)
  Cudnn,    // fused attention by cuDNN (Transformer Engine's choice on Hopper in 2024)
  Flash2,   // FlashAttention-2, as PyTorch's SDPA flash backend bundles it (torchtitan's, Composer's)
  Triton,   // FlashAttention's Triton kernel (flash_attn_triton.py), llm-foundry's attn_impl: triton
};

std::string_view to_string(ScheduleKind s);
std::string_view to_string(RecomputeKind r);
/// How FP8 training scales each tensor (Megatron-Core's --fp8-recipe, run by
/// Transformer Engine 2.x; torchao's Float8 under torchtitan's modules).
enum class Fp8Recipe {
  Delayed,     // scale from an amax history; amaxes reduced over the stage's ranks once per micro-batch
  Tensorwise,  // current scaling: each tensor's own amax, read right before its cast
  Blockwise,   // DeepSeek-style fp32 scales per 1×128 (activations, gradients) or 128×128 (weights) block
  Mxfp8,       // MXFP8: an E8M0 scale per 32 elements, multiplied natively by Blackwell's tensor cores
  Rowwise,     // torchao's row-wise (axiswise) dynamic scaling: an fp32 scale per row of each GEMM operand
};

/// How an MoE layer moves tokens to their experts' ranks (Megatron-Core's
/// --moe-token-dispatcher-type).
enum class MoeDispatcher {
  AllToAll,   // NCCL all-to-all of each token copy to its expert's rank, after the host learns the split sizes
  AllGather,  // every token gathered to every expert-parallel rank, the outputs reduce-scattered back
  Flex,       // DeepEP or HybridEP: each token once per destination NVLink domain, forwarded there
};

/// The library behind the flex dispatcher (Megatron-Core's
/// --moe-flex-dispatcher-backend): both move the same bytes; a profile may
/// hold HybridEP's measured exchange rates.
enum class MoeFlexBackend { DeepEP, HybridEP };

/// Megatron-Core's CUDA graphs (TransformerConfig.cuda_graph_impl,
/// megatron/core/transformer/cuda_graph_config.py at d98e8a64dd): none; per
/// layer, by Megatron-Core's own capture (local) or Transformer Engine's
/// make_graphed_callables (transformer_engine), over the CudaGraphModules
/// chosen (none chosen: whole layers); or the whole forward and backward of
/// a step, every micro-batch, as one graph (full_iteration:
/// FullCudaGraphWrapper around forward_backward_func, whose
/// finalize_model_grads is inside; the optimizer step runs eagerly). A
/// captured kernel costs the host nothing to issue; a replay costs what one
/// issued task does (cost::HostIssue).
enum class CudaGraphImpl : std::uint8_t { None, Local, TransformerEngine, FullIteration };

/// Capture regions of per-layer CUDA graphs (Megatron-Core's CudaGraphModule,
/// enums.py at d98e8a64dd), as bits. The same bits name the region an op of
/// a layer belongs to (workload::OpSpec::graph_region): attn, the attention
/// sublayer with its input norm and residual (_forward_attention); mlp, a
/// dense layer's MLP sublayer (_forward_mlp); moe_router, an MoE layer's
/// pre-MLP norm, router and, when not overlapped, shared experts;
/// moe_preprocess, MoELayer.preprocess (a latent MoE's down projection and
/// the dispatcher's preprocessing); moe, the rest of the MoE sublayer (the
/// "moe" module captures all three MoE regions: drop-and-pad layers only);
/// mamba, a Mamba layer.
using CudaGraphModules = std::uint8_t;
inline constexpr CudaGraphModules kGraphAttn = 1;
inline constexpr CudaGraphModules kGraphMlp = 2;
inline constexpr CudaGraphModules kGraphMoe = 4;
inline constexpr CudaGraphModules kGraphMoeRouter = 8;
inline constexpr CudaGraphModules kGraphMoePreprocess = 16;
inline constexpr CudaGraphModules kGraphMamba = 32;
inline constexpr CudaGraphModules kGraphAllLayerRegions =
    kGraphAttn | kGraphMlp | kGraphMoe | kGraphMoeRouter | kGraphMoePreprocess | kGraphMamba;
/// Megatron-Core's names of the modules.
struct CudaGraphModuleName {
  CudaGraphModules bit;
  const char* name;
};
inline constexpr CudaGraphModuleName kCudaGraphModuleNames[] = {{kGraphAttn, "attn"},
                                                                {kGraphMlp, "mlp"},
                                                                {kGraphMoe, "moe"},
                                                                {kGraphMoeRouter, "moe_router"},
                                                                {kGraphMoePreprocess, "moe_preprocess"},
                                                                {kGraphMamba, "mamba"}};

/// The optimizer (Megatron-Core's --optimizer).
enum class Optimizer {
  Adam,  // AdamW over every parameter
  Muon,  // Muon over the layers' 2-D weights, AdamW over the rest (emerging_optimizers, as Megatron-Core runs it)
};

/// How Muon orthogonalizes a weight split over tensor parallelism
/// (Megatron-Core's --muon-tp-mode).
enum class MuonTpMode {
  Blockwise,   // each rank's shard on its own
  Duplicated,  // the shards all-gathered, every rank orthogonalizing the whole weight (Megatron-Core's default)
};

std::string_view to_string(AttentionBackend a);
std::string_view to_string(KernelFusion k);
std::string_view to_string(Optimizer o);
std::string_view to_string(MuonTpMode m);
std::string_view to_string(CpRotateMethod r);
std::string_view to_string(MoeDispatcher d);
std::string_view to_string(MoeFlexBackend b);
std::string_view to_string(CudaGraphImpl i);
/// Megatron-Core's names of the modules, comma-separated ("" for none).
std::string cuda_graph_module_names(CudaGraphModules modules);
/// The module a Megatron-Core name stands for; 0 for a name it is not.
CudaGraphModules cuda_graph_module_named(std::string_view name);
std::string_view to_string(Fp8Recipe r);

/// The host's CPU time per issued task when the strategy does not say:
/// fitted on the even rows of vTrain's 1,440 measured single-node A100 runs
/// of Megatron-DeepSpeed (a sweep of 50–90 µs in steps of 5 with the host
/// synchronizing after each pipeline transfer, as Megatron-DeepSpeed does;
/// docs/accuracy.md, method items 15 and 16) and checked on the odd rows;
/// Transformer Engine PR #1191 measured 74 µs of CPU per forward of a
/// Megatron-Core linear layer.
inline constexpr double kDefaultHostOverheadS = 65e-6;

/// HBM per GPU a step cannot use when the strategy does not say: the CUDA
/// context, about 400 MB with CUDA ≥ 11.7's lazy module loading (PyTorch
/// maintainer ptrblck, pytorch/pytorch#109888, 2023), and three NCCL
/// communicators — tensor, data and pipeline parallel, the ones a 3D run
/// uses — of 688 MB each, as measured for a communicator of more than two
/// A100s after a 4 MB all-reduce (NVIDIA/nccl#964, 2023). The caching
/// allocator's fragmentation is not in it: no figure was found.
inline constexpr double kDefaultMemoryHeadroomBytes = 0.4e9 + 3 * 0.688e9;

/// Modules whose saved inputs fine-grained activation offloading moves to
/// the host (Megatron-Core's offload_modules names): the routed experts'
/// fc1 input (expert_fc1), their activation's input, fc1's output
/// (moe_act), or every input the fused grouped MLP keeps (fused_group_mlp).
inline constexpr std::uint8_t kOffloadExpertFc1 = 1;
inline constexpr std::uint8_t kOffloadMoeAct = 2;
inline constexpr std::uint8_t kOffloadFusedGroupMlp = 4;
/// Each offload module's bit and Megatron-Core's name for it.
struct OffloadModuleName {
  std::uint8_t bit;
  const char* name;
};
inline constexpr OffloadModuleName kOffloadModuleNames[] = {{kOffloadExpertFc1, "expert_fc1"},
                                                            {kOffloadMoeAct, "moe_act"},
                                                            {kOffloadFusedGroupMlp, "fused_group_mlp"}};
/// The offload module a Megatron-Core name stands for; 0 for a name it is not.
std::uint8_t offload_module_named(std::string_view name);

/// Linear modules a quantization recipe may run in a format of their own
/// (Megatron-Core's quant_recipe, whose glob matchers Megatron-Bridge's
/// Nemotron 3 Super NVFP4 recipe loads from te_quant.cfg at 067f987df):
/// attention's QKV and output projections (*.linear_qkv, *.linear_proj),
/// a latent MoE's two projections (*mlp.fc[12]_latent_proj), a Mamba
/// mixer's output projection (*mixer.out_proj), every linear of the MTP
/// depths (mtp.*).
enum class LinearModule : std::uint8_t { Attention, LatentProjection, MambaOutProj, Mtp };
inline constexpr std::size_t kLinearModules = 4;
struct LinearModuleName {
  LinearModule module;
  const char* name;
};
inline constexpr LinearModuleName kLinearModuleNames[] = {{LinearModule::Attention, "attention"},
                                                          {LinearModule::LatentProjection, "latent_proj"},
                                                          {LinearModule::MambaOutProj, "mamba_out_proj"},
                                                          {LinearModule::Mtp, "mtp"}};

struct ParallelConfig {
  std::int64_t world_size = 1;  // GPUs = tp·cp·dp·pp
  std::int64_t tp = 1;          // tensor-model-parallel size
  std::int64_t pp = 1;          // pipeline-model-parallel size
  std::int64_t dp = 1;          // data-parallel size = world / (tp·cp·pp)
  std::int64_t cp = 1;          // context-parallel size: the sequence split over cp ranks
  /// MoE layers lay the same ranks out as expert_tp · ep · expert_dp · pp
  /// (Megatron-Core's expert rank generator): expert_dp = tp·cp·dp / (expert_tp·ep).
  std::int64_t ep = 1;
  std::int64_t expert_tp = 1;
  std::int64_t vpp = 1;         // model chunks per stage (interleaved); DualPipe holds 2
  /// Layers of each virtual stage along a micro-batch's path (p·vpp of them
  /// when interleaved, else p), first to last: uneven when they do not divide
  /// the layers or the user set the first/last stage's. See stage_partition.hpp.
  std::vector<std::int64_t> virtual_stage_layers;
  std::int64_t micro_batch_size = 1;   // sequences per micro-batch
  std::int64_t global_batch_size = 1;  // sequences per step, all replicas
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  RecomputeKind recompute = RecomputeKind::None;
  /// What selective recomputation reruns (recompute_modules.hpp); an empty
  /// set reruns nothing, as Megatron-Core's `--recompute-modules` with no name.
  RecomputeModules recompute_modules = kDefaultRecomputeModules;
  /// The modules rerun in this run: recompute_modules under selective
  /// recomputation, none otherwise.
  RecomputeModules selective_modules() const {
    return recompute == RecomputeKind::Selective ? recompute_modules : RecomputeModules{0};
  }
  /// Full recomputation of only the first N layers of each stage (chunk); 0: all.
  std::int64_t recompute_num_layers = 0;
  bool sequence_parallel = false;
  /// ZeRO stage (Rajbhandari et al. 2020): 1 shards optimizer states over the
  /// data-parallel group (Megatron's distributed optimizer), 2 also gradients,
  /// 3 also parameters (FSDP).
  int zero_stage = 0;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  Optimizer optimizer = Optimizer::Adam;
  /// Muon under Megatron-Core's layer-wise distributed optimizer (--optimizer
  /// dist_muon, or muon with --use-distributed-optimizer): each weight is
  /// updated, whole, by one rank of the group that reduces its gradient, which
  /// alone keeps its optimizer state; the updated weights are all-gathered.
  bool muon_layer_wise = false;
  /// Newton-Schulz iterations a Muon update runs (--muon-num-ns-steps).
  std::int64_t muon_ns_steps = 5;
  MuonTpMode muon_tp_mode = MuonTpMode::Duplicated;
  /// AdamW's state a parameter keeps in the optimizer's shards, in bytes:
  /// the fp32 master weight and two fp32 moments (12) unless Megatron-Core's
  /// precision-aware optimizer (--use-precision-aware-optimizer, Transformer
  /// Engine's FusedAdam) stores them narrower: an fp32 master weight as the
  /// 16 bits a bf16 parameter does not already hold (store_param_remainders)
  /// or an fp16 one, 2; a moment in fp16 or bf16, 2, in fp8, 1.
  int adam_master_weight_bytes = 4;
  int adam_exp_avg_bytes = 4;
  int adam_exp_avg_sq_bytes = 4;
  int adam_state_bytes() const { return adam_master_weight_bytes + adam_exp_avg_bytes + adam_exp_avg_sq_bytes; }
  /// Under fp8 or nvfp4 with the distributed optimizer: parameters are kept
  /// and gathered quantized (Megatron-Core's --fp8-param-gather and
  /// --fp4-param-gather; strategy::Quantization says in what).
  bool fp8_param_gather = false;
  /// Not a user's choice: the GPU's FP8 GEMMs take any operand layout
  /// (hardware::GpuSpec::fp8_gemm_any_layout), filled in from the hardware
  /// profile by whatever simulates the step (simulate_step, the planner).
  bool fp8_any_layout = false;
  /// Gradients kept and reduced in bf16 (Megatron's --grad-reduce-in-bf16;
  /// DeepSpeed's fp16 ZeRO). By default Megatron-LM accumulates and reduces
  /// them in fp32 under bf16 training (megatron/training/arguments.py:
  /// "bfloat16 requires gradient accumulation and all-reduce to be done in
  /// fp32"), which doubles the bytes of every gradient reduction.
  bool grad_reduce_in_bf16 = false;
  /// ZeRO-3 collectives that block compute, as DeepSpeed 0.3 ran them: a
  /// layer's parameter all-gather starts when the layer is reached and the
  /// layer waits for it, and its gradient reduce-scatter ends before the next
  /// layer's backward (every parameter gather began with a device-wide
  /// torch.cuda.synchronize(), partition_parameters.py _allgather_param,
  /// which also waited for the reductions on their own stream). Each
  /// parameter tensor has its own collective over a list of one tensor per
  /// rank, which PyTorch copies rank by rank (taskgraph::kTensorList).
  /// Default: the next layer's parameters are gathered while a layer runs
  /// (FSDP's prefetch) and gradients are reduced beside the backward, a
  /// layer's tensors together.
  bool zero3_blocking = false;
  /// Bytes of one gradient element, held and reduced.
  int gradient_bytes() const { return grad_reduce_in_bf16 ? 2 : 4; }
  /// Transformer Engine's TP communication overlap: the all-gather before a
  /// column-parallel GEMM and the reduce-scatter after a row-parallel one run
  /// in chunks beside the GEMM (needs sequence parallelism).
  bool tp_comm_overlap = false;
  /// Without SP, the TP all-reduce of a column-parallel linear's input
  /// gradient runs beside its weight-gradient GEMM (Megatron-LM's
  /// --async-tensor-model-parallel-allreduce, from commit cf7efd4f5a of
  /// 2021-08-30, later the default). False: after it, blocking the
  /// GEMMs that follow, as Megatron-LM ran before (the input's
  /// copy_to_tensor_model_parallel_region all-reduced the gradient in its
  /// backward, after the linear's), and as --no-async-tensor-model-parallel-allreduce asks.
  bool async_tp_allreduce = true;
  /// A weight-gradient GEMM accumulates straight into the main (fp32, or
  /// bf16) gradient: Megatron-LM's gradient-accumulation fusion, on by
  /// default since commit 83b1e42f30 (2022-02-13). False
  /// (--no-gradient-accumulation-fusion, and Megatron-LM before it): the GEMM
  /// writes a bf16 gradient and a backward hook adds it into the main
  /// gradient, one elementwise kernel per weight per micro-batch
  /// (megatron/model/distributed.py: param.main_grad.add_(param.grad.data)).
  bool gradient_accumulation_fusion = true;
  /// The loss's kernels: Transformer Engine's fused parallel cross-entropy
  /// (--cross-entropy-loss-fusion with the te implementation: two passes over
  /// the bf16 logits and one in backward), flash-attn's fused cross-entropy
  /// (--flash-attn-cross-entropy), or unfused (Megatron's eight kernels over
  /// fp32 logits; F.cross_entropy under torch modules).
  LossKernel loss_kernel = LossKernel::Unfused;
  /// Megatron-LM 2021's pipeline sends without SP: each TP rank sends 1/t of
  /// the activation; the receiving TP group all-gathers it over NVLink.
  bool scatter_gather_pipeline = false;
  /// The host synchronizes the device after every pipeline send/receive call
  /// (torch.cuda.synchronize() after batch_isend_irecv: Megatron-LM's
  /// p2p_communication.py since 2021, Megatron-Core's batch_p2p_sync). A
  /// send and the receive that follows it are one batched call, synchronized
  /// once. The host then issues nothing until the GPU has drained, so it
  /// loses its lead over the GPU at every pipeline transfer.
  bool batch_p2p_sync = false;
  /// Megatron-Core's --overlap-p2p-communication (its default): under the
  /// interleaved schedule sends and receives are issued one by one, not
  /// batched, so batch_p2p_sync does not apply to it (other schedules keep
  /// batching: Megatron-Core turns the overlap off for them).
  bool overlap_p2p_comm = false;
  /// Whether pipeline transfers end in a host synchronization (above).
  bool host_syncs_after_p2p() const {
    return batch_p2p_sync && !(overlap_p2p_comm && schedule == ScheduleKind::Interleaved);
  }
  /// CPU time the framework spends issuing each kernel or collective
  /// (seconds); zero: the host keeps ahead of the GPU. A property of the
  /// software stack and the host CPU, not of the GPU (cost::HostIssue).
  double host_overhead_s = kDefaultHostOverheadS;
  /// Whether the run set host_overhead_s itself; if not, a hardware profile
  /// that knows its host's time (node.host_overhead_us) sets it
  /// (simulate::on_hardware).
  bool host_overhead_given = false;
  /// CUDA graphs (Megatron-Core's cuda_graph_impl and cuda_graph_modules).
  CudaGraphImpl cuda_graph_impl = CudaGraphImpl::None;
  CudaGraphModules cuda_graph_modules = 0;
  /// The layer regions (OpSpec::graph_region bits) whose kernels replay
  /// from per-layer graphs: the chosen modules, "moe" standing for the MoE
  /// layer's three regions, no module meaning whole layers; none without
  /// per-layer graphs (full_iteration captures everything otherwise).
  CudaGraphModules graph_captured_regions() const {
    if (cuda_graph_impl != CudaGraphImpl::Local && cuda_graph_impl != CudaGraphImpl::TransformerEngine) return 0;
    if (cuda_graph_modules == 0) return kGraphAllLayerRegions;
    CudaGraphModules r = cuda_graph_modules;
    if (r & kGraphMoe) r |= kGraphMoeRouter | kGraphMoePreprocess;
    return r;
  }
  /// HBM per GPU the step cannot use (CUDA context, NCCL, allocator): a
  /// strategy fits when its peak plus this is within the GPU's memory.
  double memory_headroom_bytes = kDefaultMemoryHeadroomBytes;
  /// MoE token capacity per expert as a multiple of an even share; empty: dropless.
  std::optional<double> moe_capacity_factor;
  /// The routed tokens the busiest expert-parallel rank receives, as a
  /// multiple of an even share (1: balanced routing).
  double moe_load_imbalance = 1.0;
  /// How MoE layers dispatch and combine tokens.
  MoeDispatcher moe_dispatcher = MoeDispatcher::AllToAll;
  /// Its library under the flex dispatcher (Megatron-Core's default: DeepEP).
  MoeFlexBackend moe_flex_backend = MoeFlexBackend::DeepEP;
  /// The SMs the flex exchange's kernels hold while they run (Megatron-Core's
  /// moe_flex_dispatcher_num_sms); 0: the library's default.
  int moe_flex_num_sms = 0;
  /// Megatron-Core's --overlap-moe-expert-parallel-comm: the combined 1F1B
  /// schedule, each steady-state forward run together with the backward of
  /// another micro-batch so that one's dispatch and combine run under the
  /// other's kernels (strategy::make_pipeline_order).
  bool overlap_moe_expert_parallel_comm = false;
  /// Megatron-Core's --delay-wgrad-compute (with the overlap above): the
  /// experts' weight-gradient GEMMs run after the backward dispatch is
  /// issued, beside it, instead of before it.
  bool delay_wgrad_compute = false;
  AttentionBackend attention = AttentionBackend::Flash;
  /// Eager or Compiled: the layers as torchtitan's PyTorch modules run them
  /// (separate query, key and value linears, gate and up linears, grouped
  /// keys and values copied to every head, and the memory-bound ops outside
  /// the compiled blocks, final norm and loss, one kernel an ATen op:
  /// workload/layer_ops.hpp says which). Compiled: each transformer block
  /// under torch.compile (torchtitan's apply_compile), Inductor fusing each
  /// chain of memory-bound ops between two GEMMs or attention kernels into
  /// one kernel.
  KernelFusion kernel_fusion = KernelFusion::Fused;
  /// torchtitan's PyTorch modules, eager or compiled.
  bool torch_modules() const { return kernel_fusion != KernelFusion::Fused; }
  /// With those modules and cp > 1, context parallelism is PyTorch's
  /// (context_parallel), whose keys and values travel this way; with fused
  /// kernels it is Megatron-Core's ring, which passes them round.
  CpRotateMethod cp_rotate_method = CpRotateMethod::AllGather;
  /// PyTorch FSDP as ZeRO-3 (0: not FSDP): 1, FullyShardedDataParallel's
  /// flat parameters, gathered straight into their buffer, the casts on side
  /// streams; 2, fully_shard per block, whose copy-out and reduce-scatter
  /// copy-in kernels run on the compute stream. Either way the fp32 shards
  /// are the only parameter copy.
  int fsdp_version = 0;
  bool fsdp() const { return fsdp_version > 0; }
  /// Under FSDP: AdamW as PyTorch's foreach implementation after a foreach
  /// gradient-norm clip (torchtitan's), not one fused kernel.
  bool foreach_optimizer = false;
  /// Under FSDP2, whether a block frees its gathered parameters after its
  /// forward (and gathers them again for its backward).
  enum class Reshard { Always, Never, AllButLast };
  Reshard reshard_after_forward = Reshard::Always;
  /// Whether `layer` (of `num_layers`) frees its gathered parameters after
  /// its forward under ZeRO-3.
  bool reshards_after_forward(std::int64_t layer, std::int64_t num_layers) const {
    if (!fsdp()) return true;
    switch (reshard_after_forward) {
      case Reshard::Always: return true;
      case Reshard::Never: return false;
      case Reshard::AllButLast: return layer + 1 < num_layers;
    }
    return true;
  }
  /// FSDP2 under pipeline parallelism without resharding after the forward
  /// (torchtitan's default there): torch.distributed.pipelining runs every
  /// backward of a stage with set_reshard_after_backward(False) and
  /// set_requires_gradient_sync(False), then calls each parameter group's
  /// post_backward after the stage's last backward (stage.py
  /// backward_maybe_with_nosync). A block is gathered once a step, in its
  /// first forward, and kept to its last backward; its gradients accumulate
  /// unsharded and are reduce-scattered once, after that backward.
  bool fsdp_gathers_once_a_step() const {
    return fsdp_version == 2 && pp > 1 && reshard_after_forward != Reshard::Always;
  }
  /// Inputs of the transformer layers' linear GEMMs: bf16, fp8 (e4m3) under
  /// FP8 training or nvfp4 (e2m1, Transformer Engine's NVFP4 recipe) under
  /// FP4 training; everything else stays bf16.
  Dtype precision = Dtype::Bf16;
  /// Under fp8: how tensors are scaled (ignored under bf16).
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;
  /// The format the linears' GEMMs multiply in, which sets their tensor-core
  /// rate: MXFP8 under that recipe (blockwise runs as fp8: emulated on
  /// Hopper, converted to MXFP8 scales on Blackwell), else the precision.
  Dtype gemm_dtype() const {
    return precision == Dtype::Fp8 && fp8_recipe == Fp8Recipe::Mxfp8 ? Dtype::Mxfp8 : precision;
  }
  /// Megatron-Core's first_last_layers_bf16: under fp8 or nvfp4 the first
  /// bf16_layers_at_start and the last bf16_layers_at_end transformer layers
  /// of the model (global indices, wherever their pipeline stage) run
  /// outside the quantization context, their linears and attention in bf16
  /// and their weights kept in bf16 (fp8_utils.py is_first_last_bf16_layer,
  /// fp4_utils.py get_fp4_context at d98e8a64dd). The MTP depths are not
  /// decoder layers and keep their own rule (workload::mtp_layer_shape).
  std::int64_t bf16_layers_at_start = 0;
  std::int64_t bf16_layers_at_end = 0;
  /// Per LinearModule, the format its GEMMs multiply in where it is not the
  /// run's (module_precision): bf16 (no quantization) or MXFP8 under NVFP4.
  std::array<std::optional<Dtype>, kLinearModules> module_precision{};
  /// The format the MTP depths' linears multiply in: module_precision's
  /// where it names them; bf16 under NVFP4 (Megatron-Core's
  /// MultiTokenPredictionLayer enters a quantization context only when
  /// config.fp8 is set, and builds its weights under get_fp8_context's
  /// initialization context alone, multi_token_prediction.py at
  /// d98e8a64dd); else the run's, first_last_layers_bf16 aside (the depths
  /// are no decoder layer).
  Dtype mtp_gemm_dtype() const {
    if (const auto& own = module_precision[static_cast<std::size_t>(LinearModule::Mtp)]) return *own;
    return gemm_dtype() == Dtype::Nvfp4 ? Dtype::Bf16 : gemm_dtype();
  }
  /// Whether layer `layer` of a model of `num_layers` runs in bf16 so.
  bool bf16_layer(std::int64_t layer, std::int64_t num_layers) const {
    return first_last_bf16_layer(layer, num_layers, bf16_layers_at_start, bf16_layers_at_end);
  }
  /// The same for any counts: one of the first `at_start` or the last `at_end` layers.
  static bool first_last_bf16_layer(std::int64_t layer, std::int64_t num_layers, std::int64_t at_start,
                                    std::int64_t at_end) {
    return layer < at_start || layer >= num_layers - at_end;
  }
  /// Fused attention in FP8 (Megatron-Core's fp8_dot_product_attention):
  /// Transformer Engine's cuDNN kernel in the recipe's format.
  bool fp8_dot_product_attention = false;
  /// The format fused attention multiplies in: the linears' FP8 format
  /// under fp8_dot_product_attention (MXFP8 under that recipe), else bf16.
  Dtype attention_dtype() const { return fp8_dot_product_attention ? gemm_dtype() : Dtype::Bf16; }
  /// How ranks map to (tp, cp, ep, dp, pp) coordinates; see RankLayout.
  std::string rank_order = "tp-cp-ep-dp-pp";
  /// Megatron's DDP bucket: gradients are reduced in buckets of this many
  /// parameters (Megatron-LM default 40M; the bucket grows with dp, see
  /// DistributedDataParallelConfig.bucket_size).
  std::int64_t ddp_bucket_parameters = 40'000'000;

  /// Micro-batches each pipeline runs per step: GBS / (MBS·DP).
  std::int64_t num_microbatches() const { return global_batch_size / (micro_batch_size * dp); }
  /// Ranks of the expert-data-parallel group of an expert's weights.
  std::int64_t expert_dp() const { return tp * cp * dp / (expert_tp * ep); }
  /// Ranks over which dense gradients are reduced: data and context parallel.
  std::int64_t gradient_group() const { return (dp_shard > 0 ? dp_shard : dp) * cp; }
  /// HSDP (FSDP2 sharding inside groups of dp_shard data-parallel ranks,
  /// replicated across dp / dp_shard of them); 0: shard over all of dp.
  std::int64_t dp_shard = 0;
  std::int64_t dp_replicate() const { return dp_shard > 0 ? dp / dp_shard : 1; }

  /// Megatron-FSDP (Megatron-Core's --use-megatron-fsdp): ZeRO-style
  /// sharding (zero_stage, from --data-parallel-sharding-strategy) by
  /// Megatron's own FSDP, a transformer layer per unit, gathered a layer
  /// ahead and its gradients reduce-scattered beside the backward; the
  /// fp32 main weights sharded with the optimizer states, the bf16 (or
  /// quantized) compute weights and the gradients sharded per zero_stage.
  bool megatron_fsdp = false;
  /// Megatron-Core's --num-distributed-optimizer-instances: the
  /// data-parallel ranks (with CP, dense and expert alike) split into this
  /// many contiguous groups; the sharding (zero_stage) is inside a group
  /// (dp_shard = dp / instances), the groups are replicas. The gradients a
  /// group reduced are all-reduced across the groups after its last
  /// micro-batch's reduction (param_and_grad_buffer.py start_grad_sync; for
  /// Megatron-FSDP, HSDP's outer all-reduce), or, under
  /// outer_optimizer_sharding, reduce-scattered across them.
  std::int64_t optimizer_instances = 1;
  /// Megatron-FSDP's --outer-dp-sharding-strategy optim (Hybrid-FSDP):
  /// the optimizer states and fp32 main weights also sharded across the
  /// instances; a layer's gradients reduce-scattered across them in the
  /// last micro-batch, its parameters all-gathered across them before the
  /// first micro-batch's forward (megatron_fsdp.md, "Hybrid-FSDP").
  bool outer_optimizer_sharding = false;
  /// Ranks an expert's gradients are reduced (and sharded) over inside one
  /// optimizer instance.
  std::int64_t expert_gradient_group() const { return expert_dp() / optimizer_instances; }
  /// Ranks the optimizer states of dense (expert) parameters are split
  /// over: the sharding group, times the instances under Hybrid-FSDP.
  std::int64_t dense_optimizer_group() const {
    return gradient_group() * (outer_optimizer_sharding ? optimizer_instances : 1);
  }
  std::int64_t expert_optimizer_group() const {
    return expert_gradient_group() * (outer_optimizer_sharding ? optimizer_instances : 1);
  }

  /// Megatron-Core's fine-grained activation offloading
  /// (--fine-grained-activation-offloading, --offload-modules): a module's
  /// saved input, when it has at least min_offloaded_tensor_size elements,
  /// is copied to host memory after the layer's forward and freed, and
  /// copied back while the layer after it runs its backward
  /// (pipeline_parallel/fine_grained_activation_offload.py at d98e8a64dd).
  /// Bits: kOffloadExpertFc1, kOffloadMoeAct, kOffloadFusedGroupMlp.
  std::uint8_t offload_modules = 0;
  std::int64_t min_offloaded_tensor_size = std::int64_t{1} << 20;
};

}  // namespace ptsim::strategy

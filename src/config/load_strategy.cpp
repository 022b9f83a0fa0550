// The strategy field table, strategy files and merging (see strategy_input.hpp).
#include <fmt/format.h>

#include <algorithm>

#include "internal/object_reader.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/strategy_input.hpp"
#include "ptsim/strategy/schedule.hpp"

namespace ptsim::config {

namespace {

using S = StrategyInput;

// Megatron-LM's argument names where it has one; the help text is what
// `ptsim simulate --help` prints.
// One option a line, read as a table.
// clang-format off
const std::vector<StrategyField> kFields = {
    {"gpus", "gpus", "", &S::gpus, 1, std::int64_t{1} << 24, {}, "N", "GPUs in the job (world size)"},
    {"tp", "tensor_model_parallel_size", "tp", &S::tp, 1, std::int64_t{1} << 24, {}, "T",
     "tensor-parallel size (default 1)"},
    {"pp", "pipeline_model_parallel_size", "pp", &S::pp, 1, std::int64_t{1} << 24, {}, "P",
     "pipeline stages (default 1)"},
    {"dp", "data_parallel_size", "dp", &S::dp, 1, std::int64_t{1} << 24, {}, "D",
     "data-parallel size (default gpus / (tp·cp·pp))"},
    {"cp", "context_parallel_size", "cp", &S::cp, 1, std::int64_t{1} << 24, {}, "C",
     "context-parallel size: the sequence split over C ranks, ring attention (Megatron-Core's; PyTorch's "
     "context_parallel with --kernel-fusion eager or compiled) (default 1)"},
    {"ep", "expert_model_parallel_size", "ep", &S::ep, 1, std::int64_t{1} << 24, {}, "E",
     "expert-parallel size: MoE experts split over E ranks (default 1)"},
    {"expert_tp", "expert_tensor_parallel_size", "etp", &S::expert_tp, 1, std::int64_t{1} << 24, {}, "T",
     "tensor-parallel size inside each expert (default: tp)"},
    {"vpp", "virtual_pipeline_model_parallel_size", "vpp", &S::vpp, 1, 1 << 16, {}, "V",
     "model chunks per pipeline stage for the interleaved schedule (default 1)"},
    {"layers_per_virtual_stage", "num_layers_per_virtual_pipeline_stage", "", &S::layers_per_virtual_stage, 1,
     1 << 20, {}, "L", "layers per model chunk; sets vpp = layers per stage / L"},
    {"first_stage_layers", "decoder_first_pipeline_num_layers", "", &S::first_stage_layers, 1, 1 << 20, {},
     "L", "layers of the first pipeline stage (default: an even split)"},
    {"last_stage_layers", "decoder_last_pipeline_num_layers", "", &S::last_stage_layers, 1, 1 << 20, {}, "L",
     "layers of the last pipeline stage (default: an even split)"},
    {"pipeline_layout", "pipeline_model_parallel_layout", "", &S::pipeline_layout, 1, 1, {}, "LAYOUT",
     "the layers of every virtual stage in micro-batch order, stages split by |: E embedding, t layer, "
     "L loss, x*n and (...)*n repeat, commas ignored; sets vpp = stages / pp (e.g. \"Et*3|t*4|t*4|t*3L\" for "
     "14 layers on pp 4; default: an even split)"},
    {"account_for_embedding", "account_for_embedding_in_pipeline_split", "", &S::account_for_embedding, 1, 1, {}, "",
     "split num_layers + 1 layers evenly over the virtual stages, the embedding taking one of the first's "
     "(Megatron-Core's; the first virtual stage may then hold the embedding alone)"},
    {"account_for_loss", "account_for_loss_in_pipeline_split", "", &S::account_for_loss, 1, 1, {}, "",
     "split num_layers + 1 layers evenly over the virtual stages, the loss taking one of the last's "
     "(Megatron-Core's; with the embedding's: num_layers + 2)"},
    {"micro_batch_size", "micro_batch_size", "", &S::micro_batch_size, 1, std::int64_t{1} << 31, {}, "B",
     "sequences per micro-batch (default 1)"},
    {"global_batch_size", "global_batch_size", "", &S::global_batch_size, 1, std::int64_t{1} << 31, {}, "B",
     "sequences per step over all replicas (required)"},
    {"seq_length", "seq_length", "", &S::seq_length, 1, std::int64_t{1} << 24, {}, "S",
     "sequence length (default: the model's)"},
    {"schedule", "schedule", "", &S::schedule, 1, 1, strategy::schedule_names(), "NAME",
     strategy::schedule_choices_help()},
    {"recompute", "recompute", "", &S::recompute, 1, 1, {"none", "selective", "full", "op"}, "MODE",
     "activation recomputation: none (default) | selective (the --recompute-modules; by default core attention, "
     "under CP the whole ring attention, its transfers included) | full (whole layers) | op (torchtitan's selective "
     "op checkpointing, with --kernel-fusion eager or compiled: a layer keeps its input and the outputs of every "
     "other GEMM, wq, wv, w1, w2, and of attention; the rest reruns before its backward)"},
    {"recompute_modules", "recompute_modules", "", &S::recompute_modules, 1, 1, {}, "LIST",
     "what --recompute selective reruns, Megatron-Core's modules separated by commas: core_attn (default), "
     "moe_act (the experts' activation), layernorm (norms not fused into a linear: before MLA and MoE), "
     "mla_up_proj (MLA's up projections and RoPE; DeepSeek-V4's query up-projection through RoPE), mlp (a dense "
     "layer's MLP), moe (the MoE layer), shared_experts, mhc (hyper-connections' aggregate and residual mix); "
     "\"\" reruns nothing (in a strategy file also a JSON list)"},
    {"recompute_num_layers", "recompute_num_layers", "", &S::recompute_num_layers, 1, 1 << 20, {}, "N",
     "with --recompute full: recompute only the first N layers of each stage (chunk)"},
    {"sequence_parallel", "sequence_parallel", "", &S::sequence_parallel, 1, 1, {}, "",
     "sequence parallelism: norms and dropout split over TP, reduce-scatter/all-gather for all-reduce"},
    {"zero", "zero", "", &S::zero, 0, 3, {}, "STAGE",
     "ZeRO stage 0 (default) | 1 (optimizer states sharded) | 2 (+ gradients) | 3 (+ parameters, FSDP)"},
    {"distributed_optimizer", "use_distributed_optimizer", "", &S::distributed_optimizer, 1, 1, {}, "",
     "Megatron's distributed optimizer (ZeRO stage 1)"},
    {"overlap_grad_reduce", "overlap_grad_reduce", "", &S::overlap_grad_reduce, 1, 1, {}, "",
     "reduce gradient buckets during the last micro-batch's backward (default: after it)"},
    {"overlap_param_gather", "overlap_param_gather", "", &S::overlap_param_gather, 1, 1, {}, "",
     "with ZeRO ≥ 1: gather updated parameters under the next forward, bucket by bucket"},
    {"fp8_param_gather", "fp8_param_gather", "", &S::fp8_param_gather, 1, 1, {}, "",
     "with --precision fp8 and ZeRO 1 or 2: the optimizer casts its updated shard to fp8 and the parameters are "
     "gathered in fp8 (1 byte each); each rank then transposes its fp8 weights once per step instead of casting "
     "them (Megatron-Core's --fp8-param-gather); with --fsdp fsdp2 and --kernel-fusion compiled, torchao's "
     "float8 all-gather: each block's weights gathered in fp8, their amaxes computed and all-reduced once after "
     "the optimizer (torchtitan's --float8.enable_fsdp_float8_all_gather and "
     "--float8.precompute_float8_dynamic_scale_for_fsdp)"},
    {"fp4_param_gather", "fp4_param_gather", "", &S::fp4_param_gather, 1, 1, {}, "",
     "with NVFP4 and ZeRO 1 or 2: the parameters are gathered in NVFP4 (half a byte each) and each rank makes their "
     "column-wise copy once per step (Megatron-Core's --fp4-param-gather)"},
    {"grad_reduce_in_bf16", "grad_reduce_in_bf16", "", &S::grad_reduce_in_bf16, 1, 1, {}, "",
     "keep and reduce gradients in bf16 (2 bytes) instead of Megatron's fp32 (4 bytes) under bf16 training"},
    {"zero3_blocking", "zero3_blocking", "", &S::zero3_blocking, 1, 1, {}, "",
     "with ZeRO-3: each layer waits for its parameter all-gather, started when the layer is reached, and "
     "for the previous layer's gradient reduce-scatter, one collective per parameter tensor over a list "
     "that PyTorch copies rank by rank and that the host builds in Python, a view a rank; tensors under "
     "100,000 elements stay gathered, and full recomputation gathers again (DeepSpeed 0.3; default: a "
     "layer at a time, gathered a layer ahead, reduced beside the backward)"},
    {"moe_capacity_factor", "moe_expert_capacity_factor", "", &S::moe_capacity_factor, 1, 1, {}, "F",
     "MoE: tokens an expert takes, as a multiple of its even share (default: dropless)"},
    {"moe_load_imbalance", "moe_load_imbalance", "", &S::moe_load_imbalance, 1, 1, {}, "F",
     "MoE, with ep > 1: the routed tokens the busiest expert-parallel rank receives, as a multiple of an even "
     "share (default 1: balanced routing, what Megatron-Bridge's benchmarks force with "
     "moe_router_force_load_balancing); its experts' GEMMs, activations and exchanges carry that many, and the "
     "step waits for them; under --moe-expert-capacity-factor at most the capacity, the rest dropped. Give what "
     "your own router's statistics measure (max over mean of the tokens per EP rank; 1.30 to 4.01 unbalanced in "
     "arXiv 2606.04101's 106B to 671B models)"},
    {"moe_token_dispatcher_type", "moe_token_dispatcher_type", "", &S::moe_token_dispatcher_type, 1, 1,
     {"alltoall", "allgather", "flex"}, "NAME",
     "MoE: alltoall (default; each token copy to its expert's rank, the host synchronizing on the split sizes "
     "first) | allgather (all tokens to every EP rank, outputs reduce-scattered) | flex (DeepEP or HybridEP: "
     "each token once per destination NVLink domain, forwarded there)"},
    {"moe_flex_dispatcher_backend", "moe_flex_dispatcher_backend", "", &S::moe_flex_dispatcher_backend, 1, 1,
     {"deepep", "hybridep"}, "NAME",
     "with --moe-token-dispatcher-type flex: deepep (default) | hybridep; both exchange tokens as flex says, "
     "each at the profile's measured rate where it has one (network.nvlink.deepep, network.nvlink.hybridep; "
     "hybridep across nodes network.nic.hybridep)"},
    {"moe_flex_dispatcher_num_sms", "moe_flex_dispatcher_num_sms", "", &S::moe_flex_dispatcher_num_sms, 1, 1024, {},
     "N",
     "with --moe-token-dispatcher-type flex: the SMs the dispatch and combine kernels hold while they run "
     "(Megatron-Core's; default the library's: DeepEP 20, HybridEP 24 inside one NVLink domain and 8 across); "
     "kernels running beside an exchange have the other SMs only. The exchange keeps the profile's measured "
     "rate, measured at the SM count its table names"},
    {"overlap_moe_expert_parallel_comm", "overlap_moe_expert_parallel_comm", "",
     &S::overlap_moe_expert_parallel_comm, 1, 1, {}, "",
     "MoE with --ep > 1: Megatron-Core's combined 1F1B, one more warm-up forward and every steady-state forward run "
     "together with the backward of another micro-batch, the dispatch and combine of each under the other's "
     "kernels (interleaved schedule, or pp 1)"},
    {"delay_wgrad_compute", "delay_wgrad_compute", "", &S::delay_wgrad_compute, 1, 1, {}, "",
     "with --overlap-moe-expert-parallel-comm: the experts' weight-gradient GEMMs run beside the backward "
     "dispatch instead of before it (Megatron-Core's --delay-wgrad-compute)"},
    {"tp_comm_overlap", "tp_comm_overlap", "", &S::tp_comm_overlap, 1, 1, {}, "",
     "with --sequence-parallel: pipeline TP all-gathers and reduce-scatters with their GEMMs "
     "(Transformer Engine's userbuffers)"},
    {"scatter_gather_pipeline", "scatter_gather_tensors_in_pipeline", "", &S::scatter_gather_pipeline, 1, 1, {}, "",
     "without SP: each TP rank sends 1/t of a pipeline activation and the receivers all-gather it "
     "(Megatron-LM 2021)"},
    {"batch_p2p_sync", "batch_p2p_sync", "", &S::batch_p2p_sync, 1, 1, {}, "",
     "the host synchronizes the GPU (torch.cuda.synchronize()) after every pipeline send/receive call and "
     "issues nothing more until the GPU has drained; a call is what Megatron batches: under 1F1B a send "
     "with the other pass's receive after it, under the interleaved schedule every transfer between two "
     "compute passes (Megatron-LM since 2021; Megatron-Core's batch_p2p_sync, on by default where sends "
     "are batched)"},
    {"overlap_p2p_comm", "overlap_p2p_comm", "", &S::overlap_p2p_comm, 1, 1, {}, "",
     "interleaved schedule: sends and receives issued one by one, not batched, so --batch-p2p-sync does not "
     "apply to it (Megatron-Core's --overlap-p2p-communication, on by default there)"},
    {"no_async_tp_allreduce", "no_async_tensor_model_parallel_allreduce", "", &S::no_async_tp_allreduce, 1, 1, {}, "",
     "without SP: all-reduce a column-parallel linear's input gradient after its weight gradient, blocking "
     "the next GEMM (Megatron-LM before September 2021; default: beside the weight-gradient GEMM)"},
    {"no_gradient_accumulation_fusion", "no_gradient_accumulation_fusion", "", &S::no_gradient_accumulation_fusion,
     1, 1, {}, "",
     "each weight-gradient GEMM writes a bf16 gradient that a separate kernel adds into the main gradient "
     "(Megatron-LM before February 2022; default: the GEMM accumulates into it)"},
    {"cross_entropy_loss_fusion", "cross_entropy_loss_fusion", "", &S::cross_entropy_loss_fusion, 1, 1, {}, "",
     "the loss as Transformer Engine's fused parallel cross-entropy (Megatron-Core --cross-entropy-loss-fusion "
     "--cross-entropy-fusion-impl te): two passes over the bf16 logits and one in backward, instead of "
     "Megatron's eight kernels over fp32 logits"},
    {"flash_attn_cross_entropy", "flash_attn_cross_entropy", "", &S::flash_attn_cross_entropy, 1, 1, {}, "",
     "the loss as flash-attn's fused cross-entropy (flash_attn.losses.cross_entropy.CrossEntropyLoss, "
     "llm-foundry's MPT loss_fn fused_crossentropy, its default): two reads of the bf16 logits forward and "
     "one read and one write backward, the logits kept, instead of Megatron's eight kernels over fp32 logits; "
     "over TP its vocabulary-parallel form (each rank's log-sum-exp all-gathered, the losses all-reduced)"},
    {"fp8_dot_product_attention", "fp8_dot_product_attention", "", &S::fp8_dot_product_attention, 1, 1, {}, "",
     "with --precision fp8 (delayed, tensorwise or mxfp8 recipe): the fused attention in FP8, as Transformer "
     "Engine runs it (cuDNN's FP8 kernel; Megatron-Core's TransformerConfig.fp8_dot_product_attention, which "
     "Megatron-Bridge's MXFP8 recipes set); Q, K and V are quantized before it and the output gradient before "
     "its backward; needs the profile's FP8 attention figures"},
    {"host_overhead_us", "host_overhead_us", "", &S::host_overhead_us, 0, 1, {}, "US",
     "CPU time in µs the framework spends issuing each kernel or collective, in program order; a task "
     "cannot start before its host has issued it (default 65, fitted to vTrain's measured A100 runs of "
     "Megatron-DeepSpeed; 0: the host keeps ahead of the GPU, as with CUDA graphs). Measured elsewhere: "
     "Megatron-Core's ColumnParallelLinear 74 µs, its Transformer Engine version 140 µs of CPU per forward "
     "(TE PR #1191, 2024)"},
    {"cuda_graph_impl", "cuda_graph_impl", "", &S::cuda_graph_impl, 1, 1,
     {"none", "local", "transformer_engine", "full_iteration"}, "IMPL",
     "Megatron-Core's CUDA graphs: none (default) | local or transformer_engine (per layer, over the "
     "--cuda-graph-modules; none given: whole layers) | full_iteration (every micro-batch's forward and backward "
     "and the gradient reduction as one graph; the optimizer step stays eager). A captured kernel costs the host "
     "no time to issue (--host-overhead-us), a graph's replay what one kernel does; inside a full-iteration graph "
     "the host never waits on the GPU"},
    {"cuda_graph_modules", "cuda_graph_modules", "", &S::cuda_graph_modules, 1, 1, {}, "LIST",
     "with --cuda-graph-impl local or transformer_engine, what each layer's graphs capture, Megatron-Core's "
     "modules separated by commas: attn (the attention sublayer with its norm), mlp (a dense layer's MLP "
     "sublayer), moe (an MoE sublayer whole: drop-and-pad layers only), moe_router (the pre-MLP norm, router and "
     "shared experts), moe_preprocess (a latent MoE's down projection and the dispatcher's preprocessing; with "
     "moe_router), mamba (Mamba layers); empty: whole layers (in a strategy file also a JSON list)"},
    {"memory_headroom_gib", "memory_headroom", "", &S::memory_headroom_gib, 0, 1, {}, "GIB",
     "HBM per GPU a step cannot use, in GiB: the CUDA context, NCCL's buffers and what the caching allocator "
     "holds back; a strategy fits when its peak plus this is within HBM (default 2.29: a 0.4 GB CUDA "
     "context and three NCCL communicators of 0.688 GB, docs/formats.md; 0: the whole HBM)"},
    {"rank_order", "rank_order", "", &S::rank_order, 1, 1, {}, "ORDER",
     "how ranks map to parallel coordinates, innermost first (default tp-cp-ep-dp-pp, Megatron's)"},
    {"attention_backend", "attention_backend", "", &S::attention_backend, 1, 1,
     {"flash", "unfused", "cudnn", "flash2", "triton"}, "NAME",
     "flash (fused attention kernels at the profile's flash figures, default: FlashAttention-2's on the A100, "
     "FlashAttention-3's on the H100; the profile's sources say which) | unfused (separate QK, softmax, dropout, "
     "PV kernels) | cudnn (cuDNN's fused attention, as Transformer Engine runs it on Hopper; needs the profile's "
     "cuDNN efficiencies) | flash2 (FlashAttention-2 on any GPU, as PyTorch's scaled_dot_product_attention bundles it; needs the "
     "profile's flash2 efficiencies) | triton (FlashAttention's Triton kernel, llm-foundry's attn_impl: triton; needs "
     "the profile's triton efficiencies, measured on the A100 only)"},
    {"kernel_fusion", "kernel_fusion", "", &S::kernel_fusion, 1, 1, {"fused", "eager", "compiled"}, "HOW",
     "how the layers' memory-bound ops run: fused (default: Transformer Engine's and Megatron-Core's fused norm, "
     "RoPE, SwiGLU and cross-entropy kernels) | eager (PyTorch eager, one kernel an op, as torchtitan's Llama code "
     "ran in December 2024: RMSNorm in eight kernels over an fp32 copy, RoPE through complex64, SiLU and the gate "
     "product apart, grouped keys and values expanded to every head, cross-entropy over fp32 logits) | compiled "
     "(the same code with each transformer block under torch.compile, torchtitan's --training.compile: one kernel "
     "for each chain of memory-bound ops between GEMMs and attention, the final norm and the loss still eager); "
     "eager is bf16 only; compiled also takes --precision fp8: torchao's Float8Linear in every block linear "
     "(torchtitan's --float8.enable_float8_linear; the output layer bf16), dynamic per-tensor scaling, one cast "
     "of an input its linears share, the weights cast in every forward"},
    {"cp_rotate_method", "context_parallel_rotate_method", "", &S::cp_rotate_method, 1, 1,
     {"allgather", "alltoall"}, "HOW",
     "with --cp > 1 and --kernel-fusion eager or compiled, whose context parallelism is PyTorch's "
     "(context_parallel, as torchtitan runs it): how each rank's keys and values reach the others, allgather "
     "(default, PyTorch's and torchtitan's: one all-gather of every shard's keys and values a pass) | alltoall "
     "(each shard sent on to the next rank before every step); either way the key and value gradients travel "
     "round the ring in fp32 (torchtitan's --experimental.context_parallel_rotate_method)"},
    {"fsdp", "fsdp", "", &S::fsdp, 1, 1, {"fsdp1", "fsdp2"}, "VERSION",
     "PyTorch FSDP as the data parallelism, ZeRO-3's sharding with the fp32 shards as the only copy of the "
     "parameters (16 bytes a parameter, not 18; implies --zero 3): fsdp2 (fully_shard per transformer block, as "
     "torchtitan runs it: each block's gathered bf16 parameters copied out of the all-gather buffer, and its "
     "gradients copied into the reduce-scatter buffer in the reduction type, by kernels on the compute stream) | "
     "fsdp1 (FullyShardedDataParallel's flat parameters, as Composer runs them: gathered straight into their "
     "buffer, cast and divided on side streams; FULL_SHARD is --reshard-after-forward always, its default, "
     "SHARD_GRAD_OP never)"},
    {"optimizer_impl", "optimizer_impl", "", &S::optimizer_impl, 1, 1, {"fused", "foreach"}, "HOW",
     "with --fsdp, how AdamW updates the fp32 shards: fused (default: one kernel, 28 bytes a parameter) | "
     "foreach (PyTorch's torch.optim.AdamW with foreach=True, torchtitan's default: eight passes over the shard, "
     "84 bytes a parameter, after clip_grad_norm_'s foreach norm, 4 bytes, an all-reduce of the norm and the "
     "foreach scale, 8 bytes)"},
    {"optimizer", "optimizer", "", &S::optimizer, 1, 1, {"adam", "muon", "dist_muon"}, "NAME",
     "Megatron-Core's optimizer: adam (default: AdamW, 12 bytes of state a parameter) | muon (Muon on the layers' "
     "2-D weights, momentum alone in fp32, 8 bytes with the master weight, each update orthogonalized by "
     "--muon-num-ns-steps Newton-Schulz iterations of three bf16 GEMMs; AdamW on embeddings, the output layer, "
     "norms and biases; with --use-distributed-optimizer, Megatron-Core's layer-wise distributed optimizer: each "
     "weight updated whole by one rank, the states sharded so, the weights all-gathered after) | dist_muon (the "
     "same layer-wise Muon as Megatron-Bridge's recipes run it, without --use-distributed-optimizer: gradients "
     "all-reduced, then the updated weights all-gathered)"},
    {"muon_num_ns_steps", "muon_num_ns_steps", "", &S::muon_num_ns_steps, 1, 100, {}, "N",
     "with --optimizer muon or dist_muon: Newton-Schulz iterations of an update (default 5, Megatron-Core's)"},
    {"muon_tp_mode", "muon_tp_mode", "", &S::muon_tp_mode, 1, 1, {"blockwise", "duplicated"}, "HOW",
     "with Muon at tp or expert_tp > 1: how a weight split over those ranks is orthogonalized, duplicated (default, "
     "Megatron-Core's: each shard all-gathered in fp32, every rank iterating on the whole weight) | blockwise (each "
     "rank's shard on its own, Megatron-Bridge's recipes)"},
    {"precision_aware_optimizer", "use_precision_aware_optimizer", "", &S::precision_aware_optimizer, 1, 1, {}, "",
     "with --use-distributed-optimizer and AdamW: Megatron-Core's precision-aware optimizer (Transformer Engine's "
     "FusedAdam), which keeps the optimizer's shards narrower than 12 bytes a parameter: the master weight by "
     "--main-params-dtype, the moments by --exp-avg-dtype and --exp-avg-sq-dtype; an fp32 master weight of a bf16 "
     "parameter is kept as the 16 bits the parameter lacks (store_param_remainders, 2 bytes) where Transformer "
     "Engine holds it (an fp16 one, or no FP8 recipe but delayed scaling) and the parameter is not quantized (no "
     "--fp8-param-gather), else whole (4)"},
    {"main_params_dtype", "main_params_dtype", "", &S::main_params_dtype, 1, 1, {"fp32", "fp16"}, "DTYPE",
     "with --use-precision-aware-optimizer: the master weights' dtype, fp32 (default) | fp16"},
    {"exp_avg_dtype", "exp_avg_dtype", "", &S::exp_avg_dtype, 1, 1, {"fp32", "fp16", "bf16", "fp8"}, "DTYPE",
     "with --use-precision-aware-optimizer: AdamW's first moment as stored, fp32 (default) | fp16 | bf16 | fp8"},
    {"exp_avg_sq_dtype", "exp_avg_sq_dtype", "", &S::exp_avg_sq_dtype, 1, 1, {"fp32", "fp16", "bf16", "fp8"}, "DTYPE",
     "with --use-precision-aware-optimizer: AdamW's second moment as stored, fp32 (default) | fp16 | bf16 | fp8"},
    {"reshard_after_forward", "reshard_after_forward", "", &S::reshard_after_forward, 1, 1,
     {"default", "always", "never"}, "POLICY",
     "with --fsdp: free a block's gathered parameters after its forward and gather them again for its backward "
     "(always: FSDP1's FULL_SHARD, its default), keep them to the backward (never: SHARD_GRAD_OP), or "
     "torchtitan's default for fsdp2: always but for the last block, whose backward follows at once (never with "
     "pipeline parallelism, where fsdp2 gathers a block once a step and reduce-scatters its accumulated gradients "
     "once, after the stage's last backward, as torch.distributed.pipelining runs it)"},
    {"dp_shard", "data_parallel_shard_degree", "", &S::dp_shard, 1, std::int64_t{1} << 24, {}, "N",
     "with --fsdp: HSDP, parameters sharded over groups of N data-parallel ranks (times cp) and replicated "
     "across the groups: all-gathers and reduce-scatters inside a group, the reduced shard all-reduced across "
     "them (torchtitan's data_parallel_shard_degree; default: every data-parallel rank)"},
    {"dp_replicate", "data_parallel_replicate_degree", "", &S::dp_replicate, 1, std::int64_t{1} << 24, {}, "N",
     "with --fsdp: HSDP's number of replicas, dp / data_parallel_shard_degree (torchtitan's "
     "data_parallel_replicate_degree)"},
    {"megatron_fsdp", "use_megatron_fsdp", "", &S::megatron_fsdp, 1, 1, {}, "",
     "Megatron-FSDP as the data parallelism (Megatron-Core's): what --data-parallel-sharding-strategy shards, "
     "sharded a transformer layer at a time, the next layer's parameters gathered while one runs and each "
     "layer's gradients reduce-scattered beside its backward, every micro-batch; gradients kept and reduced in "
     "bf16 unless --megatron-fsdp-main-grads-dtype fp32; implies the distributed optimizer"},
    {"dp_sharding_strategy", "data_parallel_sharding_strategy", "", &S::dp_sharding_strategy, 1, 1,
     {"no_shard", "optim", "optim_grads", "optim_grads_params"}, "WHAT",
     "with --use-megatron-fsdp: no_shard (ZeRO 0) | optim (ZeRO 1) | optim_grads (ZeRO 2) | optim_grads_params "
     "(ZeRO 3, Megatron-LM's default)"},
    {"outer_dp_sharding_strategy", "outer_dp_sharding_strategy", "", &S::outer_dp_sharding_strategy, 1, 1,
     {"no_shard", "optim"}, "WHAT",
     "with --use-megatron-fsdp and --num-distributed-optimizer-instances > 1: no_shard (default, HSDP: the "
     "instances are replicas, each layer's reduced gradient shard all-reduced across them in the last "
     "micro-batch) | optim (Hybrid-FSDP, with optim_grads_params: the optimizer states and fp32 main weights "
     "sharded across the instances too, each layer's gradient shard reduce-scattered across them in the last "
     "micro-batch and its parameters all-gathered across them before the first micro-batch's forward)"},
    {"optimizer_instances", "num_distributed_optimizer_instances", "", &S::optimizer_instances, 1,
     std::int64_t{1} << 24, {}, "N",
     "with the distributed optimizer or Megatron-FSDP: the data-parallel ranks (dense and expert) split into N "
     "contiguous groups, each sharding over its own ranks (dp / N, expert dp / N) and replicating the others; "
     "gradients reduced inside a group, then all-reduced across the groups on a stream of their own (default 1)"},
    {"fsdp_main_params_dtype", "megatron_fsdp_main_params_dtype", "", &S::fsdp_main_params_dtype, 1, 1, {"fp32"},
     "DTYPE", "with --use-megatron-fsdp: the main weights' dtype, fp32 (the default and the one modelled)"},
    {"fsdp_main_grads_dtype", "megatron_fsdp_main_grads_dtype", "", &S::fsdp_main_grads_dtype, 1, 1,
     {"auto", "bf16", "fp32"}, "DTYPE",
     "with --use-megatron-fsdp: the dtype gradients accumulate in, auto (default: the compute weights', bf16) | "
     "bf16 | fp32"},
    {"fsdp_grad_comm_dtype", "megatron_fsdp_grad_comm_dtype", "", &S::fsdp_grad_comm_dtype, 1, 1,
     {"auto", "bf16", "fp32"}, "DTYPE",
     "with --use-megatron-fsdp: the dtype gradients are reduced in, auto (default: the main gradients') or the "
     "same as they; a different one is not modelled"},
    {"activation_offloading", "fine_grained_activation_offloading", "", &S::activation_offloading, 1, 1, {}, "",
     "Megatron-Core's fine-grained activation offloading: the saved inputs of the --offload-modules copied to host "
     "memory after each layer's forward (freed once copied) and back while the next layer runs its backward, on "
     "copy streams of their own at the profile's host_link_GBps; the last offloadable layer of each model chunk "
     "keeps its inputs, as Megatron-Core keeps the group its backward needs at once"},
    {"offload_modules", "offload_modules", "", &S::offload_modules, 1, 1, {}, "LIST",
     "with --fine-grained-activation-offloading, whose saved inputs move, comma-separated: expert_fc1 (the routed "
     "experts' fc1 input), moe_act (their activation's input, fc1's output), fused_group_mlp (every input the "
     "experts' fused grouped MLP keeps) (in a strategy file also a JSON list)"},
    {"min_offloaded_tensor_size", "min_offloaded_tensor_size", "", &S::min_offloaded_tensor_size, 1,
     std::int64_t{1} << 40, {}, "N",
     "with --fine-grained-activation-offloading: tensors of fewer elements stay on the GPU (default 1048576, "
     "Megatron-Core's)"},
    {"precision", "precision", "", &S::precision, 1, 1, {"bf16", "fp8", "nvfp4"}, "DTYPE",
     "the layers' GEMMs: bf16 (default) | fp8 (with casts and amax bookkeeping) | nvfp4 (Transformer Engine's "
     "NVFP4 recipe, the same as --fp4-format e2m1; needs the profile's nvfp4 rate, Blackwell's)"},
    {"fp4_format", "fp4_format", "", &S::fp4_format, 1, 1, {"e2m1"}, "FORMAT",
     "FP4 training in E2M1 values (Megatron-Core's --fp4-format; sets --precision nvfp4)"},
    {"fp4_recipe", "fp4_recipe", "", &S::fp4_recipe, 1, 1, {"nvfp4"}, "NAME",
     "with FP4 training: nvfp4 (default; a scale per 16 values and one per tensor, the Hadamard transform on "
     "weight-gradient operands, stochastic rounding of gradients; Megatron-Core's --fp4-recipe)"},
    {"fp8_recipe", "fp8_recipe", "", &S::fp8_recipe, 1, 1, {"delayed", "tensorwise", "blockwise", "mxfp8", "rowwise"},
     "NAME",
     "with --precision fp8, how Transformer Engine scales each tensor: delayed (default, but tensorwise under "
     "--kernel-fusion compiled, torchao's only one; amax histories "
     "reduced over the stage's ranks once per micro-batch) | tensorwise (current scaling: every cast first "
     "reads its tensor for the amax; under SP the shard amaxes of gathered tensors are all-reduced over TP) | "
     "blockwise (fp32 scales per 1x128 or 128x128 block, each tensor quantized both ways; no TP communication "
     "overlap) | mxfp8 (a scale per 32 elements; needs the profile's mxfp8 rate, Blackwell's) "
     "(Megatron-Core's --fp8-recipe) | rowwise (torchao's row-wise scaling under --kernel-fusion compiled: "
     "each operand cast both ways, the gradient GEMMs' outputs rescaled; without TP or --fp8-param-gather)"},
    {"first_last_layers_bf16", "first_last_layers_bf16", "", &S::first_last_layers_bf16, 1, 1, {}, "",
     "with fp8 or nvfp4 training: the model's first --num-layers-at-start-in-bf16 and last "
     "--num-layers-at-end-in-bf16 transformer layers (1 and 1 by default, Megatron-Core's) run in bf16, their linears, "
     "attention and weights; the MTP depths stay quantized (Megatron-Core's --first-last-layers-bf16)"},
    {"bf16_layers_at_start", "num_layers_at_start_in_bf16", "", &S::bf16_layers_at_start, 0, std::int64_t{1} << 20, {},
     "N", "with --first-last-layers-bf16: the model's first N layers in bf16 (default 1; at most the layers per "
     "pipeline stage)"},
    {"bf16_layers_at_end", "num_layers_at_end_in_bf16", "", &S::bf16_layers_at_end, 0, std::int64_t{1} << 20, {}, "N",
     "with --first-last-layers-bf16: the model's last N layers in bf16 (default 1; at most the layers per pipeline "
     "stage)"},
    {"module_precision", "module_precision", "", &S::module_precision, 1, 1, {}, "LIST",
     "with fp8 or nvfp4 training, modules whose linears run in another format, as Megatron-Core's quant_recipe "
     "matchers set them: comma-separated MODULE=FORMAT, MODULE one of attention (QKV and output projections), "
     "latent_proj (a latent MoE's projections), mamba_out_proj, mtp (the MTP depths' linears), FORMAT bf16, or "
     "mxfp8 under nvfp4; e.g. attention=bf16,latent_proj=bf16,mtp=bf16,mamba_out_proj=mxfp8 (Megatron-Bridge's "
     "Nemotron 3 Super NVFP4 recipe)"},
    {"te_precision_config_file", "te_precision_config_file", "", &S::te_precision_config_file, 1, 1, {}, "FILE",
     "with fp8 or nvfp4 training, Megatron-LM's YAML of per-module Transformer Engine recipes (configs and ordered "
     "glob matchers over module names, as Megatron-Bridge's te_quant.cfg), read into --module-precision: the "
     "modules it covers (attention's QKV and output projections, a latent MoE's projections, Mamba's out_proj, "
     "the MTP depths) in bf16, or MXFP8 under NVFP4; any other module it changes is refused by name"},
};
// clang-format on

std::vector<std::string> as_strings(const std::vector<std::string_view>& v) {
  return {v.begin(), v.end()};
}

}  // namespace

std::string StrategyField::flags() const {
  std::string flag = key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return alias[0] != '\0' ? fmt::format("--{}/--{}", flag, alias) : "--" + flag;
}

std::span<const StrategyField> strategy_fields() { return kFields; }

std::string StrategyInput::where(const std::string& field) const {
  if (const auto it = origin.find(field); it != origin.end()) return it->second;
  for (const auto& f : kFields)
    if (field == f.field) return f.flags();
  return field;
}

StrategyInput load_strategy(const std::string& path, InputFiles& inputs) {
  return parse_strategy(internal::read_json_file(path, inputs), path);
}

StrategyInput parse_strategy(const nlohmann::json& object, const std::string& where, const std::string& path) {
  if (!object.is_object())
    throw ConfigError(fmt::format("{}: {} must be a JSON object of strategy keys", where, path.empty() ? "the document" : path));
  // Megatron-Core's recompute_modules is a list; ptsim's value the names
  // joined by commas, as --recompute-modules takes them.
  nlohmann::json normalized;
  const nlohmann::json* read = &object;
  for (const auto& [key, example] : {std::pair{"recompute_modules", R"(["moe_act", "layernorm"])"},
                                     std::pair{"offload_modules", R"(["expert_fc1", "moe_act"])"},
                                     std::pair{"cuda_graph_modules", R"(["attn", "moe_router"])"}}) {
    const auto it = read->find(key);
    if (it == read->end() || !it->is_array()) continue;
    std::string joined;
    for (const auto& name : *it) {
      if (!name.is_string())
        throw ConfigError(fmt::format("{}: {}: {} is not a module name; expected a list of strings such as {}", where,
                                      key, name.dump(), example));
      joined += (joined.empty() ? "" : ",") + name.get<std::string>();
    }
    if (read != &normalized) normalized = object;
    normalized[key] = joined;
    read = &normalized;
  }
  internal::ObjectReader in(*read, where, path);
  StrategyInput s;
  std::string accepted;
  for (const auto& f : kFields) {
    accepted += accepted.empty() ? "" : ", ";
    accepted += f.alias[0] != '\0' ? fmt::format("{} ({})", f.key, f.alias) : std::string(f.key);
    std::string key = f.key;
    const bool has_alias = f.alias[0] != '\0' && in.has(f.alias);
    if (has_alias && in.has(f.key)) in.fail(f.alias, fmt::format("repeats {}; give one of the two", f.key));
    if (has_alias) key = f.alias;
    if (f.alias[0] != '\0') in.skip(f.alias);
    in.skip(f.key);
    if (!in.has(key)) continue;
    s.origin[f.field] = in.locate(key);
    std::visit(
        [&](auto member) {
          using Value = typename std::remove_reference_t<decltype(s.*member)>::value_type;
          if constexpr (std::is_same_v<Value, std::int64_t>) {
            s.*member = in.integer(key, f.min, f.max);
          } else if constexpr (std::is_same_v<Value, double>) {
            s.*member = in.number(key, f.min == 0 ? 0.0 : 1e-6, 1e6);  // min 0: zero switches it off
          } else if constexpr (std::is_same_v<Value, bool>) {
            s.*member = in.boolean(key);
          } else {
            s.*member = f.choices.empty() ? in.string(key) : in.choice(key, as_strings(f.choices));
          }
        },
        f.member);
  }
  in.reject_unknown_keys("accepted keys: " + accepted);
  return s;
}

StrategyInput merge(StrategyInput base, const StrategyInput& o) {
  for (const auto& f : kFields) {
    std::visit(
        [&](auto member) {
          if (!(o.*member)) return;
          base.*member = o.*member;
          if (const auto it = o.origin.find(f.field); it != o.origin.end()) {
            base.origin[f.field] = it->second;
          } else {
            base.origin.erase(f.field);
          }
        },
        f.member);
  }
  return base;
}

}  // namespace ptsim::config

// Defaults and cross-file checks of a run (see resolve_run.hpp).
#include "ptsim/config/resolve_run.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <array>
#include <variant>
#include <vector>

#include "internal/run_checker.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/pipeline_layout.hpp"
#include "ptsim/config/te_precision_config.hpp"
#include "ptsim/strategy/quantization.hpp"
#include "ptsim/strategy/rank_layout.hpp"
#include "ptsim/strategy/schedule.hpp"
#include "ptsim/strategy/stage_partition.hpp"

namespace ptsim::config {

namespace {

using internal::check_pipeline;
using internal::Checker;
using internal::divisors_hint;
using internal::enforce;
using internal::kMaxBatch;
using internal::kMaxGpus;
using internal::kMaxSeq;

// The value of an enum whose name (its to_string) is `name`. The strategy
// readers admit only these names (their choices lists), so any other here is
// ptsim's own bug, never a silent default.
template <typename E, std::size_t N>
E named(const std::string& name, const std::array<E, N>& values, const char* what) {
  for (const E v : values)
    if (to_string(v) == name) return v;
  PTSIM_ASSERT(false, fmt::format("a {} name the strategy readers did not check: '{}'", what, name).c_str());
  return values[0];
}

// Tensor, context and expert parallelism against the model's dimensions.
void check_model_splits(const Checker& check, const model::ModelSpec& m, strategy::ParallelConfig& c,
                        const StrategyInput& s) {
  // deepseek_v4_hybrid_attention.py: "DSv4 Hybrid Attention only supports TP size 1."
  if (m.has_compressed_attention() && c.tp > 1)
    check.fail("tp", c.tp,
               fmt::format("must be 1 with DeepSeek-V4's compressed attention (model {}): Megatron-Core's "
                           "DSv4 hybrid attention supports TP 1 only",
                           m.name),
               "use --tp 1 (and --ep for the experts)");
  check.divides("tp", c.tp, m.num_attention_heads, "num_attention_heads");
  if (!m.multi_latent_attention)
    check.divides("tp", c.tp, m.num_query_groups, "num_query_groups", "key/value heads are split over TP ranks");
  const bool has_dense_mlp =
      m.is_hybrid() ? m.hybrid_layer_pattern.find('-') != std::string::npos : !m.is_moe() || m.first_dense_layers > 0;
  if (has_dense_mlp) check.divides("tp", c.tp, m.ffn_hidden_size, "ffn_hidden_size");
  if (m.has_mamba_layers()) {
    // MambaMixer splits its heads and its groups over the TP ranks.
    check.divides("tp", c.tp, m.mamba_num_heads, "mamba_num_heads");
    check.divides("tp", c.tp, m.mamba_num_groups, "mamba_num_groups");
  }
  if (m.moe_shared_expert_intermediate_size > 0)
    check.divides("tp", c.tp, m.moe_shared_expert_intermediate_size, "moe_shared_expert_intermediate_size");

  c.cp = check.bounded(s.cp, 1, "cp", kMaxGpus);
  if (c.cp > 1) {
    if (m.seq_length % (2 * c.cp) != 0)
      check.fail("cp", c.cp,
                 fmt::format("must split seq_length = {} into 2·cp equal chunks (Megatron's causal load "
                             "balancing gives each CP rank chunks i and 2·cp−1−i)",
                             m.seq_length),
                 "choose cp with seq_length divisible by 2·cp");
    if (c.attention == strategy::AttentionBackend::Unfused)
      check.fail("cp", c.cp, "needs fused attention (ring attention runs FlashAttention blocks)",
                 "drop --attention-backend unfused");
    // Models whose attention or mixers the ring model does not describe.
    const char* unmodelled =
        m.is_hybrid()          ? "for hybrid models: Megatron-Core's Mamba layers exchange their heads over CP with "
                                 "all-to-alls that ptsim does not build"
        : m.sliding_window > 0 ? "with sliding-window attention: a window shorter than the ring skips blocks the "
                                 "ring model would charge"
        : m.has_compressed_attention() ? "with DeepSeek-V4's compressed attention: Megatron-Core runs it under CP "
                                         "only in THD format with boundary exchanges ptsim does not build"
                                       : nullptr;
    if (unmodelled)
      check.fail("cp", c.cp, fmt::format("is not simulated {} (model {})", unmodelled, m.name),
                 "use --cp 1 for this model");
  }

  c.ep = check.bounded(s.ep, 1, "ep", kMaxGpus);
  c.expert_tp = check.bounded(s.expert_tp, c.tp, "expert_tp", kMaxGpus);
  if (!m.is_moe()) {
    if (c.ep > 1) check.fail("ep", c.ep, fmt::format("needs a mixture-of-experts model; {} is dense", m.name), "drop --ep");
    if (s.expert_tp && c.expert_tp != c.tp)
      check.fail("expert_tp", c.expert_tp, fmt::format("needs a mixture-of-experts model; {} is dense", m.name),
                 "drop --expert-tensor-parallel-size");
    if (s.moe_capacity_factor)
      check.fail_flag("moe_capacity_factor", fmt::format("needs a mixture-of-experts model; {} is dense", m.name),
                      "drop --moe-expert-capacity-factor");
    if (s.moe_token_dispatcher_type)
      check.fail("moe_token_dispatcher_type", *s.moe_token_dispatcher_type,
                 fmt::format("needs a mixture-of-experts model; {} is dense", m.name), "drop it");
    if (s.moe_load_imbalance)
      check.fail_flag("moe_load_imbalance", fmt::format("needs a mixture-of-experts model; {} is dense", m.name),
                      "drop --moe-load-imbalance");
  } else {
    c.moe_dispatcher = named(s.moe_token_dispatcher_type.value_or("alltoall"),
                             std::array{strategy::MoeDispatcher::AllToAll, strategy::MoeDispatcher::AllGather,
                                        strategy::MoeDispatcher::Flex},
                             "MoE token dispatcher");
    check.divides("ep", c.ep, m.num_moe_experts, "num_moe_experts", "each EP rank holds whole experts");
    check.divides("expert_tp", c.expert_tp, m.moe_ffn_hidden_size, "moe_ffn_hidden_size");
    c.moe_capacity_factor = s.moe_capacity_factor;
    // The busiest of ep ranks receives at least an even share and at most
    // every routed token; with one EP rank it processes all of them however
    // they are routed.
    if (s.moe_load_imbalance) {
      const double f = *s.moe_load_imbalance;
      if (!(f >= 1.0 && f <= static_cast<double>(c.ep)))
        check.fail("moe_load_imbalance", fmt::format("{:g}", f),
                   c.ep == 1 ? "has no effect with ep 1: every expert is local and the rank processes every routed "
                               "token however the router spreads them"
                             : fmt::format("must be between 1 (an even share) and ep = {} (every routed token on "
                                           "one rank)",
                                           c.ep),
                   c.ep == 1 ? "drop --moe-load-imbalance, or add --ep" : "give a value in that range");
      c.moe_load_imbalance = f;
    }
  }
  if (s.moe_flex_dispatcher_backend && c.moe_dispatcher != strategy::MoeDispatcher::Flex)
    check.fail("moe_flex_dispatcher_backend", *s.moe_flex_dispatcher_backend, "needs --moe-token-dispatcher-type flex",
               "add it, or drop --moe-flex-dispatcher-backend");
  if (s.moe_flex_dispatcher_backend)
    c.moe_flex_backend = named(*s.moe_flex_dispatcher_backend,
                               std::array{strategy::MoeFlexBackend::DeepEP, strategy::MoeFlexBackend::HybridEP},
                               "flex dispatcher backend");
  if (s.moe_flex_dispatcher_num_sms && c.moe_dispatcher != strategy::MoeDispatcher::Flex)
    check.fail("moe_flex_dispatcher_num_sms", fmt::format("{}", *s.moe_flex_dispatcher_num_sms),
               "needs --moe-token-dispatcher-type flex (the SMs of DeepEP's or HybridEP's kernels)",
               "add it, or drop --moe-flex-dispatcher-num-sms");
  if (s.moe_flex_dispatcher_num_sms) c.moe_flex_num_sms = static_cast<int>(*s.moe_flex_dispatcher_num_sms);
}

// Layers per virtual stage and the schedule that runs them.
// PyTorch FSDP2 as the data parallelism: ZeRO-3's sharding, and when a
// block frees its gathered parameters (torchtitan's policies).
void check_fsdp(const Checker& check, strategy::ParallelConfig& c, const StrategyInput& s) {
  c.fsdp_version = !s.fsdp ? 0 : *s.fsdp == "fsdp1" ? 1 : 2;
  if (c.fsdp()) {
    if (s.distributed_optimizer.value_or(false))
      check.fail_flag("fsdp",
                      "shards parameters, gradients and optimizer states (ZeRO-3), which contradicts "
                      "--use-distributed-optimizer (Megatron's ZeRO-1)",
                      "give one of the two");
    if (s.zero && *s.zero != 3)
      check.fail("zero", *s.zero, "contradicts --fsdp, which shards the parameters (ZeRO stage 3)",
                 "give --zero 3 or drop --zero");
    if (s.zero3_blocking.value_or(false))
      check.fail_flag("zero3_blocking", "is DeepSpeed 0.3's ZeRO-3, not PyTorch's FSDP",
                      "drop --zero3-blocking or --fsdp");
    c.zero_stage = 3;
  }
  c.foreach_optimizer = s.optimizer_impl.value_or("fused") == "foreach";
  if (s.optimizer_impl && !c.fsdp())
    check.fail("optimizer_impl", *s.optimizer_impl,
               "is how PyTorch's AdamW runs over FSDP's fp32 shards; without --fsdp the optimizer is the "
               "framework's fused kernel",
               "add --fsdp fsdp1|fsdp2, or drop --optimizer-impl");
  if (!s.reshard_after_forward) {
    // FSDP1's default FULL_SHARD frees every unit; torchtitan's FSDP2 all but
    // the last block, none under pipeline parallelism.
    c.reshard_after_forward = c.fsdp_version == 1 ? strategy::ParallelConfig::Reshard::Always
                              : c.pp > 1          ? strategy::ParallelConfig::Reshard::Never
                                                  : strategy::ParallelConfig::Reshard::AllButLast;
  } else {
    if (!c.fsdp())
      check.fail_flag("reshard_after_forward", "is an FSDP policy", "add --fsdp or drop --reshard-after-forward");
    const std::string& policy = *s.reshard_after_forward;
    c.reshard_after_forward = policy == "always"  ? strategy::ParallelConfig::Reshard::Always
                              : policy == "never" ? strategy::ParallelConfig::Reshard::Never
                              : c.pp > 1          ? strategy::ParallelConfig::Reshard::Never
                                                  : strategy::ParallelConfig::Reshard::AllButLast;
  }
  // FSDP2 under pipeline parallelism keeps its blocks gathered through the
  // step (ParallelConfig::fsdp_gathers_once_a_step); FSDP1 is not a module
  // torch.distributed.pipelining knows, and what it would do is not modelled.
  if (c.fsdp_version == 1 && c.pp > 1 && c.reshard_after_forward != strategy::ParallelConfig::Reshard::Always)
    check.fail_flag("reshard_after_forward",
                    "keeps FSDP1's units gathered across pipeline micro-batches, which ptsim does not model "
                    "(torch.distributed.pipelining drives FSDP2 modules only)",
                    "give --reshard-after-forward always, --fsdp fsdp2, or --pp 1");
}

// HSDP: FSDP2 sharding inside groups of data-parallel ranks, replicated
// across them (torchtitan's data_parallel_shard_degree and
// data_parallel_replicate_degree, whose product is the data parallelism).
void check_hsdp(const Checker& check, const model::ModelSpec& m, strategy::ParallelConfig& c, const StrategyInput& s) {
  if (!s.dp_shard && !s.dp_replicate) return;
  const char* field = s.dp_shard ? "dp_shard" : "dp_replicate";
  if (!c.fsdp()) check.fail_flag(field, "is FSDP's hybrid sharding", "add --fsdp or drop it");
  if (m.is_moe())
    check.fail_flag(field, "with experts is not modelled (their gradients have a group of their own)",
                    "drop it, or use a dense model");
  const std::int64_t shard = s.dp_shard ? *s.dp_shard : c.dp / *s.dp_replicate;
  if (s.dp_replicate && c.dp % *s.dp_replicate != 0)
    check.fail("dp_replicate", *s.dp_replicate, fmt::format("must divide the data parallelism, {}", c.dp),
               "choose a divisor of dp");
  if (c.dp % shard != 0)
    check.fail("dp_shard", shard, fmt::format("must divide the data parallelism, {}", c.dp), "choose a divisor of dp");
  if (s.dp_shard && s.dp_replicate && *s.dp_shard * *s.dp_replicate != c.dp)
    check.fail("dp_replicate", *s.dp_replicate,
               fmt::format("times data_parallel_shard_degree {} must be the data parallelism, {}", *s.dp_shard, c.dp),
               "give one of the two, or a pair whose product is dp");
  c.dp_shard = shard == c.dp ? 0 : shard;
}

// Megatron-FSDP (megatron/core/distributed/fsdp at d98e8a64dd): its
// sharding strategy is a ZeRO stage run by Megatron's own FSDP; its main
// gradients default to the compute weights' dtype, bf16 (arguments.py maps
// --megatron-fsdp-main-grads-dtype auto to None: "main gradients will match
// the dtype of the model compute parameters"), and are reduced in that
// dtype unless --megatron-fsdp-grad-comm-dtype says otherwise.
void check_megatron_fsdp(const Checker& check, strategy::ParallelConfig& c, const StrategyInput& s) {
  c.megatron_fsdp = s.megatron_fsdp.value_or(false);
  if (!c.megatron_fsdp) {
    const std::pair<const char*, bool> fsdp_only[] = {{"dp_sharding_strategy", s.dp_sharding_strategy.has_value()},
                                                      {"outer_dp_sharding_strategy",
                                                       s.outer_dp_sharding_strategy.has_value()},
                                                      {"fsdp_main_params_dtype", s.fsdp_main_params_dtype.has_value()},
                                                      {"fsdp_main_grads_dtype", s.fsdp_main_grads_dtype.has_value()},
                                                      {"fsdp_grad_comm_dtype", s.fsdp_grad_comm_dtype.has_value()}};
    for (const auto& [field, given] : fsdp_only)
      if (given) check.fail_flag(field, "applies to Megatron-FSDP", "add --use-megatron-fsdp, or drop it");
    return;
  }
  if (c.fsdp()) check.fail_flag("megatron_fsdp", "contradicts --fsdp (PyTorch's FSDP)", "give one of the two");
  if (s.zero3_blocking.value_or(false))
    check.fail_flag("zero3_blocking", "is DeepSpeed 0.3's ZeRO-3, not Megatron-FSDP", "drop one of the two");
  const std::string strategy = s.dp_sharding_strategy.value_or("optim_grads_params");
  const int stage = strategy == "no_shard" ? 0 : strategy == "optim" ? 1 : strategy == "optim_grads" ? 2 : 3;
  if (s.zero && *s.zero != stage)
    check.fail("zero", *s.zero,
               fmt::format("contradicts Megatron-FSDP's sharding strategy {} (ZeRO stage {})", strategy, stage),
               "give --data-parallel-sharding-strategy alone");
  c.zero_stage = stage;
  const std::string main = s.fsdp_main_grads_dtype.value_or("auto") == "fp32" ? "fp32" : "bf16";
  const std::string comm = s.fsdp_grad_comm_dtype.value_or("auto") == "auto" ? main : *s.fsdp_grad_comm_dtype;
  if (comm != main)
    check.fail("fsdp_grad_comm_dtype", comm,
               fmt::format("differs from the main gradients' {}: casts around each reduction are not modelled", main),
               fmt::format("give {} or auto", main));
  if (s.grad_reduce_in_bf16.value_or(false) && main == "fp32")
    check.fail_flag("grad_reduce_in_bf16", "contradicts --megatron-fsdp-main-grads-dtype fp32", "drop one of the two");
  c.grad_reduce_in_bf16 = main == "bf16";
}

// Megatron-Core's --num-distributed-optimizer-instances, and Megatron-FSDP's
// outer sharding across them (parallel_state.py at d98e8a64dd: the intra
// groups are contiguous runs of dp·cp / instances ranks of the DP-with-CP
// group and of expert_dp / instances ranks of the expert DP group).
void check_optimizer_instances(const Checker& check, const model::ModelSpec& m, strategy::ParallelConfig& c,
                               const StrategyInput& s) {
  c.optimizer_instances = s.optimizer_instances.value_or(1);
  const std::string outer = s.outer_dp_sharding_strategy.value_or("no_shard");
  c.outer_optimizer_sharding = outer == "optim";
  const std::int64_t r = c.optimizer_instances;
  if (r == 1) {
    if (c.outer_optimizer_sharding)
      check.fail("outer_dp_sharding_strategy", outer,
                 "shards across optimizer instances, and there is one (Megatron-FSDP enables its outer sharding "
                 "only with --num-distributed-optimizer-instances > 1)",
                 "add --num-distributed-optimizer-instances N, or drop it");
    return;
  }
  if (c.zero_stage < 1)
    check.fail("optimizer_instances", r, "splits the distributed optimizer, which this run does not use",
               "add --use-distributed-optimizer (or Megatron-FSDP with a sharding strategy), or drop it");
  if (c.fsdp() || s.dp_shard || s.dp_replicate)
    check.fail("optimizer_instances", r,
               "is Megatron's; PyTorch FSDP's hybrid sharding is --data-parallel-shard-degree", "drop one of the two");
  if (c.optimizer == strategy::Optimizer::Muon)
    check.fail("optimizer_instances", r, "with Muon is not modelled", "drop it, or use --optimizer adam");
  if (strategy::describe(c.schedule).two_directions)
    check.fail("optimizer_instances", r, "with DualPipe's mirrored stages is not modelled", "drop it");
  if (c.dp % r != 0)
    check.fail("optimizer_instances", r, fmt::format("must divide the data parallelism, {}", c.dp),
               fmt::format("choose one of {}", divisors_hint(c.dp)));
  if (m.is_moe() && c.expert_dp() % r != 0)
    check.fail("optimizer_instances", r,
               fmt::format("must divide the experts' data parallelism, tp·cp·dp / (expert_tp·ep) = {}", c.expert_dp()),
               fmt::format("choose one of {}", divisors_hint(c.expert_dp())));
  if (c.outer_optimizer_sharding && !(c.megatron_fsdp && c.zero_stage == 3))
    check.fail("outer_dp_sharding_strategy", outer,
               "needs Megatron-FSDP sharding the parameters (--data-parallel-sharding-strategy optim_grads_params)",
               "add those, or drop it");
  c.dp_shard = c.dp / r;
}

void check_memory_options(const Checker& check, strategy::ParallelConfig& c, const StrategyInput& s) {
  const std::string recompute = s.recompute.value_or("none");
  c.recompute = named(recompute,
                      std::array{strategy::RecomputeKind::None, strategy::RecomputeKind::Selective,
                                 strategy::RecomputeKind::Full, strategy::RecomputeKind::Op},
                      "recompute");
  // torchtitan's policy counts its eager GEMMs, wq, wk and wv apart: ptsim's
  // fused kernels (one QKV GEMM) would be counted otherwise.
  if (c.recompute == strategy::RecomputeKind::Op && !c.torch_modules())
    check.fail("recompute", recompute, "is torchtitan's selective op checkpointing, modelled over its PyTorch modules",
               "add --kernel-fusion eager or compiled, or use --recompute selective or full");
  if (s.recompute_num_layers) {
    if (c.recompute != strategy::RecomputeKind::Full)
      check.fail("recompute_num_layers", *s.recompute_num_layers, "needs --recompute full",
                 "add --recompute full or drop --recompute-num-layers");
    std::int64_t most = 0;
    for (const std::int64_t n : c.virtual_stage_layers) most = std::max(most, n);
    if (*s.recompute_num_layers > most)
      check.fail("recompute_num_layers", *s.recompute_num_layers,
                 fmt::format("exceeds the layers of a model chunk (at most {})", most),
                 fmt::format("use at most {}, or omit it to recompute every layer", most));
    c.recompute_num_layers = *s.recompute_num_layers;
  }

  c.zero_stage = static_cast<int>(s.zero.value_or(0));
  if (s.distributed_optimizer.value_or(false)) {
    if (s.zero && *s.zero != 1)
      check.fail("zero", *s.zero, "contradicts --use-distributed-optimizer (ZeRO stage 1)", "give one of the two");
    c.zero_stage = 1;
  }
  check_fsdp(check, c, s);
  check_megatron_fsdp(check, c, s);
  c.overlap_grad_reduce = s.overlap_grad_reduce.value_or(false);
  c.overlap_param_gather = s.overlap_param_gather.value_or(false);
  c.fp8_param_gather = s.fp8_param_gather.value_or(false) || s.fp4_param_gather.value_or(false);
  if (!c.megatron_fsdp) c.grad_reduce_in_bf16 = s.grad_reduce_in_bf16.value_or(false);
  c.zero3_blocking = s.zero3_blocking.value_or(false);
  c.tp_comm_overlap = s.tp_comm_overlap.value_or(false);
  c.scatter_gather_pipeline = s.scatter_gather_pipeline.value_or(false);
  c.batch_p2p_sync = s.batch_p2p_sync.value_or(false);
  c.overlap_p2p_comm = s.overlap_p2p_comm.value_or(false);
  c.async_tp_allreduce = !s.no_async_tp_allreduce.value_or(false);
  c.gradient_accumulation_fusion = !s.no_gradient_accumulation_fusion.value_or(false);
  if (s.cross_entropy_loss_fusion.value_or(false) && s.flash_attn_cross_entropy.value_or(false))
    check.fail_flag("flash_attn_cross_entropy", "contradicts --cross-entropy-loss-fusion (one loss kernel a run)",
                    "drop one of the two");
  if (s.cross_entropy_loss_fusion.value_or(false)) c.loss_kernel = strategy::LossKernel::TransformerEngine;
  if (s.flash_attn_cross_entropy.value_or(false)) c.loss_kernel = strategy::LossKernel::FlashAttn;
  c.fp8_dot_product_attention = s.fp8_dot_product_attention.value_or(false);
  c.host_overhead_s = s.host_overhead_us ? *s.host_overhead_us * 1e-6 : strategy::kDefaultHostOverheadS;
  c.host_overhead_given = s.host_overhead_us.has_value();
  c.memory_headroom_bytes = s.memory_headroom_gib ? *s.memory_headroom_gib * double(1ull << 30)
                                                  : strategy::kDefaultMemoryHeadroomBytes;
  if (c.batch_p2p_sync && !strategy::describe(c.schedule).megatron) {
    std::vector<std::string_view> megatron;
    for (const auto& d : strategy::schedules())
      if (d.megatron) megatron.push_back(d.name);
    const std::string listed =
        fmt::format("{} and {}", fmt::join(megatron.begin(), megatron.end() - 1, ", "), megatron.back());
    check.fail_flag("batch_p2p_sync", fmt::format("is Megatron-LM's, whose schedules are {}, not {}", listed,
                                                  strategy::to_string(c.schedule)),
                    "drop --batch-p2p-sync or use one of those schedules");
  }
  if (c.zero3_blocking && c.zero_stage != 3)
    check.fail_flag("zero3_blocking", "applies to ZeRO stage 3 only", "add --zero 3 or drop --zero3-blocking");
  if (c.overlap_param_gather && c.zero_stage == 0)
    check.fail_flag("overlap_param_gather", "needs sharded parameters or optimizer states",
                    "add --use-distributed-optimizer or --zero 1|2|3");
  if (s.fp8_param_gather.value_or(false) && c.precision != Dtype::Fp8)
    check.fail_flag("fp8_param_gather", "needs FP8 training", "add --precision fp8 or drop --fp8-param-gather");
  if (s.fp4_param_gather.value_or(false) && c.precision != Dtype::Nvfp4)
    check.fail_flag("fp4_param_gather", "needs FP4 training", "add --fp4-format e2m1 or drop --fp4-param-gather");
  // Under FSDP2 and torchao's Float8, the weights' shards are cast to fp8
  // before their all-gather (enable_fsdp_float8_all_gather).
  const bool torchao_gather =
      c.fsdp_version == 2 && c.kernel_fusion == strategy::KernelFusion::Compiled && c.precision == Dtype::Fp8;
  // Megatron-FSDP keeps FP8 parameters quantized: MXFP8's as their two
  // copies, the row-wise one gathered for the forward, the column-wise one
  // for the backward (megatron_fsdp mixed_precision.py
  // fp8_need_transpose_data); a per-tensor recipe's as one, gathered for
  // each pass and transposed after the backward's gather
  // (fp8_create_transpose_cache); its blockwise and NVFP4 paths are not
  // modelled.
  const bool fsdp_fp8 = c.megatron_fsdp && c.precision == Dtype::Fp8 &&
                        (c.fp8_recipe == strategy::Fp8Recipe::Mxfp8 || c.fp8_recipe == strategy::Fp8Recipe::Delayed ||
                         c.fp8_recipe == strategy::Fp8Recipe::Tensorwise);
  if (c.fp8_param_gather && c.zero_stage == 3 && c.megatron_fsdp && !fsdp_fp8)
    check.fail_flag(s.fp4_param_gather.value_or(false) ? "fp4_param_gather" : "fp8_param_gather",
                    "under Megatron-FSDP sharding the parameters is modelled for MXFP8 and per-tensor FP8 (delayed, "
                    "tensorwise) only",
                    "use one of those --fp8-recipe values, or drop it");
  if (c.fp8_param_gather && c.zero_stage == 3 && !torchao_gather && !fsdp_fp8)
    check.fail_flag(s.fp4_param_gather.value_or(false) ? "fp4_param_gather" : "fp8_param_gather",
                    "with ZeRO-3 is torchao's float8 all-gather under FSDP2 (--fsdp fsdp2 --kernel-fusion compiled "
                    "--precision fp8); otherwise it needs Megatron's distributed optimizer (ZeRO 1 or 2)",
                    "add those, or --use-distributed-optimizer, or drop --fp8-param-gather");
  if (c.fp8_param_gather && c.zero_stage < 1)
    check.fail_flag(s.fp4_param_gather.value_or(false) ? "fp4_param_gather" : "fp8_param_gather",
                    "needs Megatron's distributed optimizer, which gathers the parameters (ZeRO 1 or 2)",
                    "add --use-distributed-optimizer or drop --fp8-param-gather");
}

// Muon as Megatron-Core runs it (megatron/core/optimizer/emerging_optimizers.py,
// layer_wise_optimizer.py at d98e8a64dd; the Newton-Schulz iteration of
// NVIDIA-NeMo/Emerging-Optimizers at fd77292): over Megatron's own fused
// kernels and DDP, not PyTorch FSDP or torchtitan's modules.
void check_optimizer(const Checker& check, strategy::ParallelConfig& c, const StrategyInput& s) {
  const std::string name = s.optimizer.value_or("adam");
  c.optimizer = name == "adam" ? strategy::Optimizer::Adam : strategy::Optimizer::Muon;
  const bool muon = c.optimizer == strategy::Optimizer::Muon;
  if (!muon) {
    if (s.muon_num_ns_steps)
      check.fail("muon_num_ns_steps", *s.muon_num_ns_steps, "applies to Muon", "add --optimizer muon, or drop it");
    if (s.muon_tp_mode)
      check.fail("muon_tp_mode", *s.muon_tp_mode, "applies to Muon", "add --optimizer muon, or drop it");
    return;
  }
  if (c.fsdp() || c.zero_stage >= 2)
    check.fail("optimizer", name,
               "is modelled under Megatron-Core's data parallelism (whole gradients, or its layer-wise distributed "
               "optimizer), not ZeRO-2/3 or FSDP, whose shards split the weights Muon orthogonalizes",
               "drop --fsdp and --zero 2|3, or use --optimizer adam");
  if (c.torch_modules())
    check.fail("optimizer", name, "is modelled with Megatron-Core's fused kernels", "use --kernel-fusion fused");
  if (name == "dist_muon" && c.zero_stage == 1)
    check.fail("optimizer", name,
               "is the layer-wise Muon of a run without --use-distributed-optimizer (Megatron-Bridge's recipes); "
               "with it, Megatron-Core names the same optimizer muon",
               "use --optimizer muon, or drop --use-distributed-optimizer");
  if (c.fp8_param_gather)
    check.fail_flag(s.fp4_param_gather.value_or(false) ? "fp4_param_gather" : "fp8_param_gather",
                    "with Muon is not modelled (the layer-wise optimizer's casts of the weights it updates)",
                    "drop it, or use --optimizer adam");
  c.muon_layer_wise = name == "dist_muon" || c.zero_stage == 1;
  c.muon_ns_steps = s.muon_num_ns_steps.value_or(5);
  c.muon_tp_mode = named(s.muon_tp_mode.value_or("duplicated"),
                         std::array{strategy::MuonTpMode::Blockwise, strategy::MuonTpMode::Duplicated}, "Muon TP mode");
  // LayerWiseDistributedOptimizer gathers what it updated after the step, or
  // leaves it to the next forward's bucket gathers; dist_muon's all-reduced
  // gradients have no such buckets.
  if (name == "dist_muon" && c.overlap_param_gather)
    check.fail_flag("overlap_param_gather",
                    "with --optimizer dist_muon has no parameter buckets to gather (its gradients are all-reduced)",
                    "use --optimizer muon --use-distributed-optimizer, or drop --overlap-param-gather");
}

// Megatron-Core's precision-aware optimizer (megatron/core/optimizer/__init__.py
// and optimizer_config.py at d98e8a64dd): Transformer Engine's FusedAdam keeps
// the moments in exp_avg_dtype and exp_avg_sq_dtype; it holds the master
// weights itself (master_weight_dtype = main_params_dtype) when they are fp16,
// or the run has no FP8 recipe but delayed scaling
// (use_precision_aware_optimizer_no_fp8_or_ds_fp8), and then keeps an fp32
// master weight of a bf16 parameter as the 16 bits the parameter lacks
// (store_param_remainders, true by default); otherwise Megatron-Core keeps the
// fp32 master weight whole. Only with the distributed optimizer ("only
// supported with distributed optimizer").
void check_precision_aware_optimizer(const Checker& check, strategy::ParallelConfig& c, const StrategyInput& s) {
  const bool on = s.precision_aware_optimizer.value_or(false);
  if (!on) {
    for (const auto& [field, given] :
         {std::pair{"main_params_dtype", s.main_params_dtype}, std::pair{"exp_avg_dtype", s.exp_avg_dtype},
          std::pair{"exp_avg_sq_dtype", s.exp_avg_sq_dtype}})
      if (given)
        check.fail(field, *given,
                   "sets a dtype of Megatron-Core's precision-aware optimizer, which this run does not use",
                   "add --use-precision-aware-optimizer, or drop it");
    return;
  }
  if (c.optimizer != strategy::Optimizer::Adam)
    check.fail_flag("precision_aware_optimizer",
                    "is Transformer Engine's FusedAdam: it keeps AdamW's states, not Muon's",
                    "use --optimizer adam, or drop --use-precision-aware-optimizer");
  if (c.zero_stage != 1 || c.megatron_fsdp || c.fsdp())
    check.fail_flag("precision_aware_optimizer",
                    "is supported with Megatron-Core's distributed optimizer only (\"only supported with distributed "
                    "optimizer\"); its shards under Megatron-FSDP and PyTorch FSDP are not modelled",
                    "add --use-distributed-optimizer (and no --zero 2|3, --fsdp or --use-megatron-fsdp), or drop it");
  // The field table accepts fp32, fp16, bf16 and fp8 only: each parses.
  const auto moment_bytes = [](const std::string& dtype) { return static_cast<int>(bytes_of(*parse_dtype(dtype))); };
  const bool fp32_master = s.main_params_dtype.value_or("fp32") == "fp32";
  const bool te_holds_master =
      !fp32_master || c.precision != Dtype::Fp8 || c.fp8_recipe == strategy::Fp8Recipe::Delayed;
  // Remainders rebuild the fp32 weight from a bf16 parameter's 16 bits ("works only when param type is BF16",
  // fused_adam.py at d0067d0da): not from an fp16 one, nor a quantized one (--fp8-param-gather).
  const bool remainders = fp32_master && te_holds_master && c.precision != Dtype::Fp16 && !c.fp8_param_gather;
  c.adam_master_weight_bytes = fp32_master && !remainders ? 4 : 2;
  c.adam_exp_avg_bytes = moment_bytes(s.exp_avg_dtype.value_or("fp32"));
  c.adam_exp_avg_sq_bytes = moment_bytes(s.exp_avg_sq_dtype.value_or("fp32"));
}

// torchtitan's low precision: torchao's Float8Linear (torchao eab345c, the
// commit of torchtitan's December 2024 benchmark) in every block linear,
// the output layer left in bf16 (torchtitan/float8.py at 9dec370,
// module_filter_fn). Modelled under torch.compile, where torchtitan runs it
// ("Float8 experimental is intended to be ran under torch.compile"); its
// eager casts are a chain of ATen kernels each (abs, max, mul, clamp, to),
// not modelled. Its dynamic recipes: per-tensor scaling (tensorwise, the
// default) and row-wise scaling (rowwise, torchao's Float8LinearRecipeName
// .ROWWISE), the latter without tensor parallelism (its fp8 gathers under
// SP are not modelled) and without FSDP2's float8 all-gather, which torchao
// offers for tensorwise scaling only.
void check_torchao_float8(const Checker& check, const strategy::ParallelConfig& c, const StrategyInput& s,
                          const std::string& precision) {
  if (!c.torch_modules() || c.precision == Dtype::Bf16) return;
  const bool compiled = c.kernel_fusion == strategy::KernelFusion::Compiled;
  if (!compiled || c.precision != Dtype::Fp8)
    check.fail("kernel_fusion", *s.kernel_fusion,
               compiled
                   ? fmt::format("with precision {} is not modelled: torchtitan's low precision is torchao's Float8 "
                                 "(fp8, dynamic per-tensor scaling)",
                                 precision)
                   : fmt::format("with precision {} would be torchao's eager Float8 (a chain of ATen kernels a cast), "
                                 "not modelled: ptsim models it under torch.compile, as torchtitan runs it",
                                 precision),
               compiled ? "use --precision fp8 or bf16, or --kernel-fusion fused"
                        : "use --kernel-fusion compiled, or --precision bf16");
  if (s.fp8_recipe && *s.fp8_recipe != "tensorwise" && *s.fp8_recipe != "rowwise")
    check.fail("fp8_recipe", *s.fp8_recipe,
               "is not torchao's: its Float8Linear (torchtitan's FP8) scales each tensor, or each row, dynamically",
               "use --fp8-recipe tensorwise or rowwise, or --kernel-fusion fused for Transformer Engine's recipes");
  if (s.fp8_recipe != "rowwise") return;
  if (c.tp > 1)
    check.fail("fp8_recipe", "rowwise",
               fmt::format("with tensor parallelism (tp {}) is not modelled: its row-wise casts of sequence-parallel "
                           "shards and their gathers",
                           c.tp),
               "use --fp8-recipe tensorwise, or --tp 1");
  if (s.fp8_param_gather.value_or(false))
    check.fail_flag("fp8_param_gather",
                    "is torchao's float8 all-gather, which it offers for tensorwise scaling only "
                    "(enable_fsdp_float8_all_gather)",
                    "drop --fp8-param-gather, or use --fp8-recipe tensorwise");
}

// The names of a list separated by commas or spaces, empty ones skipped.
std::vector<std::string> names_in(const std::string& list) {
  std::vector<std::string> names;
  for (std::size_t start = 0; start <= list.size();) {
    const std::size_t end = std::min(list.find_first_of(", ", start), list.size());
    if (end > start) names.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return names;
}

// What selective recomputation reruns: Megatron-Core's recompute_modules,
// refused where its TransformerConfig refuses them (transformer_config.py
// at d98e8a64dd, __post_init__) or where ptsim's layers have no such part.
// Given without --recompute, they ask for selective recomputation.
void check_recompute_modules(const Checker& check, const model::ModelSpec& m, strategy::ParallelConfig& c,
                             const StrategyInput& s) {
  if (!s.recompute_modules) return;
  const std::string& list = *s.recompute_modules;
  if (!s.recompute) c.recompute = strategy::RecomputeKind::Selective;
  if (c.recompute != strategy::RecomputeKind::Selective)
    check.fail("recompute_modules", list,
               fmt::format("applies to selective recomputation, not to --recompute {}", *s.recompute),
               "give --recompute selective, or drop --recompute-modules");
  strategy::RecomputeModules modules = 0;
  for (const std::string& name : names_in(list)) {
    const strategy::RecomputeModule bit = strategy::recompute_module_named(name);
    if (bit == 0) {
      const bool megatron = name == "gdn_norm_out" || name == "gdp_in_proj" || name == "gdp_qkv";
      check.fail("recompute_modules", name,
                 megatron ? "is a Megatron-Core module of layers ptsim does not model (Gated DeltaNet, "
                            "GatedDeltaProduct)"
                          : "is not a recomputation module",
                 "use " + strategy::recompute_module_names());
    }
    modules |= bit;
  }
  if ((modules & strategy::kRecomputeMhc) && !m.hyper_connections())
    check.fail("recompute_modules", "mhc", "needs hyper-connections (mhc_num_residual_streams > 1); the model has none",
               "drop it");
  if ((modules & strategy::kRecomputeCoreAttn) && m.has_compressed_attention())
    check.fail("recompute_modules", "core_attn",
               "is refused by Megatron-Core's DSv4 hybrid attention (no checkpoint_core_attention)", "drop it");
  if ((modules & strategy::kRecomputeMlaUpProj) && !m.multi_latent_attention && !m.has_compressed_attention())
    check.fail("recompute_modules", "mla_up_proj",
               "needs multi-latent attention (Megatron-Core refuses it otherwise); the model has none", "drop it");
  if ((modules & (strategy::kRecomputeMoeAct | strategy::kRecomputeLayernorm)) && c.precision == Dtype::Fp8 &&
      c.fp8_recipe == strategy::Fp8Recipe::Delayed)
    check.fail("recompute_modules", list,
               "moe_act and layernorm cannot be recomputed under delayed FP8 scaling (Megatron-Core refuses it)",
               "choose another --fp8-recipe, or drop them");
  c.recompute_modules = modules;
}

// Fine-grained activation offloading (pipeline_parallel/
// fine_grained_activation_offload.py and transformer_config.py at
// d98e8a64dd): the experts' modules ptsim's MoE layers have, under the rules
// Megatron-Core asserts, and not where ptsim's layers keep nothing to move.
void check_activation_offloading(const Checker& check, const model::ModelSpec& m, strategy::ParallelConfig& c,
                                 const StrategyInput& s) {
  if (!s.activation_offloading.value_or(false)) {
    if (s.offload_modules || s.min_offloaded_tensor_size)
      check.fail_flag(s.offload_modules ? "offload_modules" : "min_offloaded_tensor_size",
                      "needs --fine-grained-activation-offloading",
                      fmt::format("add --fine-grained-activation-offloading, or drop --{}",
                                  s.offload_modules ? "offload-modules" : "min-offloaded-tensor-size"));
    return;
  }
  const std::string list = s.offload_modules.value_or("");
  std::uint8_t modules = 0;
  for (const std::string& name : names_in(list)) {
    if (const std::uint8_t bit = strategy::offload_module_named(name); bit != 0) {
      modules |= bit;
    } else {
      const bool megatron = name == "attn_norm" || name == "qkv_linear" || name == "core_attn" || name == "attn_proj" ||
                            name == "mlp_norm" || name == "gdp_qkv";
      check.fail("offload_modules", name,
                 megatron ? "is a Megatron-Core offload module ptsim does not model (it models the routed experts')"
                          : "is not an offload module",
                 "use expert_fc1, moe_act or fused_group_mlp");
    }
  }
  if (modules == 0)
    check.fail_flag("activation_offloading", "offloads the --offload-modules, and none is given",
                    "add --offload-modules expert_fc1|moe_act|fused_group_mlp");
  if ((modules & strategy::kOffloadFusedGroupMlp) && (modules & ~strategy::kOffloadFusedGroupMlp))
    check.fail("offload_modules", list,
               "combines fused_group_mlp with expert_fc1 or moe_act, which Megatron-Core refuses (the fused MLP "
               "offloads them already)",
               "give fused_group_mlp alone, or the others without it");
  if (!m.is_moe())
    check.fail("offload_modules", list, "moves the routed experts' inputs; the model has no experts", "drop it");
  if (c.recompute == strategy::RecomputeKind::Full || (c.selective_modules() & strategy::kRecomputeMoe))
    check.fail_flag("activation_offloading",
                    "with full recomputation or the moe module recomputed is not modelled (the experts keep "
                    "nothing for their backward)",
                    "recompute moe_act or core_attn selectively, or drop the offloading");
  if (c.overlap_moe_expert_parallel_comm || strategy::describe(c.schedule).two_directions || c.torch_modules())
    check.fail_flag("activation_offloading",
                    "with two overlapped lanes of layers (combined 1F1B, DualPipe) or torchtitan's modules is not "
                    "modelled",
                    "drop one of the two");
  c.offload_modules = modules;
  c.min_offloaded_tensor_size = s.min_offloaded_tensor_size.value_or(c.min_offloaded_tensor_size);
}

// CUDA graphs under the rules Megatron-Core asserts (transformer_config.py
// and cuda_graph_config.py at d98e8a64dd), and whole-layer capture of a
// dropless MoE layer, whose dispatch waits on the host mid-layer.
void check_cuda_graphs(const Checker& check, const model::ModelSpec& m, strategy::ParallelConfig& c,
                       const StrategyInput& s) {
  using strategy::CudaGraphImpl;
  c.cuda_graph_impl = named(s.cuda_graph_impl.value_or("none"),
                            std::array{CudaGraphImpl::None, CudaGraphImpl::Local, CudaGraphImpl::TransformerEngine,
                                       CudaGraphImpl::FullIteration},
                            "CUDA graph implementation");
  const bool per_layer =
      c.cuda_graph_impl == CudaGraphImpl::Local || c.cuda_graph_impl == CudaGraphImpl::TransformerEngine;
  strategy::CudaGraphModules modules = 0;
  if (s.cuda_graph_modules) {
    for (const std::string& name : names_in(*s.cuda_graph_modules)) {
      const strategy::CudaGraphModules bit = strategy::cuda_graph_module_named(name);
      if (bit == 0)
        check.fail("cuda_graph_modules", name, "is not a CUDA graph module",
                   "use " + strategy::cuda_graph_module_names(strategy::kGraphAllLayerRegions) +
                       " (none: whole layers)");
      modules |= bit;
    }
    if (!per_layer)
      check.fail("cuda_graph_modules", *s.cuda_graph_modules,
                 c.cuda_graph_impl == CudaGraphImpl::FullIteration
                     ? "must be empty with --cuda-graph-impl full_iteration (Megatron-Core asserts it)"
                     : "choose what per-layer CUDA graphs capture, and --cuda-graph-impl builds none",
                 "add --cuda-graph-impl local or transformer_engine, or drop --cuda-graph-modules");
  }
  if (!per_layer) return;
  // The local implementation captures the router and the preprocessing together.
  if (c.cuda_graph_impl == CudaGraphImpl::Local &&
      (modules & (strategy::kGraphMoeRouter | strategy::kGraphMoePreprocess)))
    modules |= strategy::kGraphMoeRouter | strategy::kGraphMoePreprocess;
  const std::string list = strategy::cuda_graph_module_names(modules);
  if ((modules & strategy::kGraphMoe) && (modules & strategy::kGraphMoeRouter))
    check.fail("cuda_graph_modules", list, "holds both moe and moe_router, which Megatron-Core refuses",
               "keep one of the two");
  if ((modules & strategy::kGraphMoePreprocess) && !(modules & strategy::kGraphMoeRouter))
    check.fail("cuda_graph_modules", list, "captures moe_preprocess without moe_router, which Megatron-Core refuses",
               "add moe_router");
  if (!m.is_moe() && (modules & (strategy::kGraphMoe | strategy::kGraphMoeRouter)))
    check.fail("cuda_graph_modules", list, fmt::format("captures MoE modules; {} has no experts", m.name),
               "drop moe, moe_router and moe_preprocess");
  bool dense_mlp = false;
  for (std::int64_t l = 0; l < m.num_layers && !dense_mlp; ++l) dense_mlp = m.has_mlp(l) && !m.is_moe_layer(l);
  if ((modules & strategy::kGraphMlp) && !dense_mlp)
    check.fail("cuda_graph_modules", list, fmt::format("captures dense MLPs; every MLP of {} is an MoE layer", m.name),
               "drop mlp (moe_router or moe capture MoE layers)");
  const bool whole_moe = m.is_moe() && (modules == 0 || (modules & strategy::kGraphMoe));
  if (whole_moe && !c.moe_capacity_factor)
    check.fail_flag("cuda_graph_modules",
                    "captures whole MoE layers, which Megatron-Core graphs only when they drop and pad to a capacity "
                    "(a dropless dispatch waits on the host mid-layer)",
                    "add --moe-expert-capacity-factor, or capture attn, moe_router and moe_preprocess instead");
  if ((modules & strategy::kGraphMoePreprocess) && c.moe_capacity_factor &&
      c.moe_dispatcher == strategy::MoeDispatcher::AllToAll)
    check.fail("cuda_graph_modules", list,
               "captures moe_preprocess of the all-to-all dispatcher with a capacity factor, whose preprocessing "
               "copies to the host and synchronizes (Megatron-Core refuses it)",
               "drop moe_preprocess");
  if (c.recompute == strategy::RecomputeKind::Full)
    check.fail_flag("cuda_graph_impl",
                    fmt::format("{} with full recomputation: Megatron-Core supports full recomputation only with "
                                "--cuda-graph-impl full_iteration",
                                strategy::to_string(c.cuda_graph_impl)),
                    "use --cuda-graph-impl full_iteration, or selective recomputation");
  if (c.cuda_graph_impl == CudaGraphImpl::TransformerEngine && (modules & strategy::kGraphMoeRouter) &&
      (c.selective_modules() & strategy::kRecomputeMoe))
    check.fail("cuda_graph_modules", list,
               "captures moe_router while the moe module is recomputed, which Megatron-Core refuses with "
               "--cuda-graph-impl transformer_engine",
               "recompute moe_act instead, or drop moe_router");
  c.cuda_graph_modules = modules;
}

// Megatron-Core's EP communication overlap and its delayed weight
// gradients, with the rules TransformerConfig.__post_init__ asserts
// (transformer_config.py at d98e8a64dd).
void check_moe_overlap(const Checker& check, const model::ModelSpec& m, strategy::ParallelConfig& c,
                       const StrategyInput& s) {
  c.overlap_moe_expert_parallel_comm = s.overlap_moe_expert_parallel_comm.value_or(false);
  c.delay_wgrad_compute = s.delay_wgrad_compute.value_or(false);
  if (c.delay_wgrad_compute && !c.overlap_moe_expert_parallel_comm)
    check.fail_flag("delay_wgrad_compute", "needs --overlap-moe-expert-parallel-comm (as Megatron-Core requires)",
                    "add it, or drop --delay-wgrad-compute");
  if (!c.overlap_moe_expert_parallel_comm) return;
  const auto refuse = [&](const std::string& rule, const std::string& fix) {
    check.fail_flag("overlap_moe_expert_parallel_comm", rule, fix);
  };
  if (!m.is_moe() || c.ep == 1)
    refuse("needs expert parallelism (a mixture-of-experts model and --ep > 1)", "drop it or set --ep");
  if (c.moe_dispatcher == strategy::MoeDispatcher::AllGather)
    refuse("needs the alltoall or flex token dispatcher, not allgather",
           "drop it or choose --moe-token-dispatcher-type alltoall|flex");
  if (c.pp > 1 && c.schedule != strategy::ScheduleKind::Interleaved)
    refuse(fmt::format("with pp = {} runs the interleaved schedule only (Megatron-Core asserts "
                       "virtual_pipeline_model_parallel_size), not {}",
                       c.pp, strategy::to_string(c.schedule)),
           "give --vpp > 1, or drop it");
  if (c.pp == 1 && c.schedule != strategy::ScheduleKind::OneFOneB)
    refuse(fmt::format("runs Megatron-Core's combined 1F1B, not {}", strategy::to_string(c.schedule)),
           "drop --schedule, or drop it");
  if (c.recompute == strategy::RecomputeKind::Full)
    refuse("cannot be combined with full recomputation (Megatron-Core refuses the pair)",
           "use --recompute selective or none");
  if (m.mtp_num_layers > 1)
    refuse(fmt::format("supports at most one multi-token-prediction layer; the model has {}", m.mtp_num_layers),
           "drop it");
  // ptsim's limit, not Megatron-Core's: ZeRO-3 gathers a layer's parameters
  // for the pass that reaches it, and a combined step runs two passes over
  // the same layers at once.
  if (c.zero_stage == 3)
    refuse("is not simulated with ZeRO-3 (two passes interleave over the same layers' gathered parameters)",
           "use --zero 1 or --use-distributed-optimizer");
}

// Transformer Engine runs FP8 attention in cuDNN's fused kernel only
// (attention/dot_product_attention/utils.py at d0067d0da6: FlashAttention 2
// and 4 and the unfused path are disabled for FP8, FlashAttention 3 for FP8
// training; FusedAttention is disabled for Float8BlockScaling and NVFP4).
void check_fp8_attention(const Checker& check, const strategy::ParallelConfig& c) {
  if (!c.fp8_dot_product_attention) return;
  const std::string fix = "drop --fp8-dot-product-attention";
  if (c.precision != Dtype::Fp8)
    check.fail_flag("fp8_dot_product_attention",
                    fmt::format("needs FP8 training (precision is {})", to_string(c.precision)),
                    "add --precision fp8 or " + fix);
  if (c.fp8_recipe == strategy::Fp8Recipe::Blockwise)
    check.fail_flag("fp8_dot_product_attention",
                    "has no kernel under the blockwise recipe: Transformer Engine disables its fused attention "
                    "for Float8BlockScaling, and no other backend runs FP8",
                    "use --fp8-recipe delayed, tensorwise or mxfp8, or " + fix);
  if (c.attention != strategy::AttentionBackend::Flash && c.attention != strategy::AttentionBackend::Cudnn)
    check.fail_flag("fp8_dot_product_attention",
                    fmt::format("is cuDNN's fused FP8 kernel, which attention backend {} is not",
                                strategy::to_string(c.attention)),
                    "use --attention-backend flash or cudnn, or " + fix);
  if (c.torch_modules())
    check.fail_flag("fp8_dot_product_attention", "is Transformer Engine's; torchtitan's modules attend in bf16",
                    "use --kernel-fusion fused, or " + fix);
  if (c.cp > 1)
    check.fail_flag("fp8_dot_product_attention", "under context parallelism is not modelled", "use --cp 1, or " + fix);
}

// Megatron-Core's first and last layers in bf16 (transformer_config.py
// __post_init__ at d98e8a64dd): delayed scaling refused, each count at most
// the layers of a pipeline stage; both counts 1 unless given.
void check_bf16_layers(const Checker& check, const model::ModelSpec& m, strategy::ParallelConfig& c,
                       const StrategyInput& s) {
  if (!s.first_last_layers_bf16.value_or(false)) {
    if (s.bf16_layers_at_start || s.bf16_layers_at_end)
      check.fail_flag(s.bf16_layers_at_start ? "bf16_layers_at_start" : "bf16_layers_at_end",
                      "counts the layers --first-last-layers-bf16 keeps in bf16, and it is not set",
                      "add --first-last-layers-bf16, or drop the count");
    return;
  }
  if (c.precision == Dtype::Bf16)
    check.fail_flag("first_last_layers_bf16", "keeps layers out of fp8 or nvfp4 training, and precision is bf16",
                    "add --precision fp8 or --fp4-format e2m1, or drop --first-last-layers-bf16");
  if (c.precision == Dtype::Fp8 && c.fp8_recipe == strategy::Fp8Recipe::Delayed)
    check.fail_flag("first_last_layers_bf16",
                    "is refused by Megatron-Core under delayed scaling (\"Delayed scaling does not support first / "
                    "last layer in BF16\")",
                    "use --fp8-recipe tensorwise, blockwise or mxfp8, or drop --first-last-layers-bf16");
  if (c.torch_modules())
    check.fail_flag("first_last_layers_bf16", "is Megatron-Core's; torchtitan's Float8 is not modelled with it",
                    "use --kernel-fusion fused, or drop --first-last-layers-bf16");
  if (c.megatron_fsdp && c.fp8_param_gather)
    check.fail_flag("first_last_layers_bf16",
                    "with Megatron-FSDP's quantized parameters (--fp8-param-gather) is not modelled",
                    "drop --fp8-param-gather or --first-last-layers-bf16");
  const std::int64_t per_stage = m.num_layers / c.pp;
  const auto count = [&](const std::optional<std::int64_t>& given, const char* field) {
    const std::int64_t n = given.value_or(1);
    if (n > per_stage)
      check.fail(field, n,
                 fmt::format("exceeds the layers of a pipeline stage, {} / pp {} = {} (Megatron-Core's bound)",
                             m.num_layers, c.pp, per_stage),
                 fmt::format("use at most {}", per_stage));
    return n;
  };
  c.bf16_layers_at_start = count(s.bf16_layers_at_start, "bf16_layers_at_start");
  c.bf16_layers_at_end = count(s.bf16_layers_at_end, "bf16_layers_at_end");
}

// Linear modules in a format of their own (Megatron-Core's quant_recipe
// matchers, as Megatron-Bridge's te_quant.cfg at 067f987df sets them):
// bf16, or MXFP8 inside NVFP4 training; only modules the model has, and
// not where ptsim does not follow the weights' formats.
void check_module_precision(const Checker& check, const model::ModelSpec& m, strategy::ParallelConfig& c,
                            const StrategyInput& s) {
  if (!s.module_precision && !s.te_precision_config_file) return;
  // Megatron-LM's --te-precision-config-file is read into the same list.
  const bool file = s.te_precision_config_file.has_value();
  const char* key = file ? "te_precision_config_file" : "module_precision";
  const char* flag = file ? "--te-precision-config-file" : "--module-precision";
  if (file && s.module_precision)
    check.fail(key, *s.te_precision_config_file, "and --module-precision both give modules formats",
               "give one of them");
  if (c.precision == Dtype::Bf16)
    check.fail(key, file ? *s.te_precision_config_file : *s.module_precision,
               "sets formats inside fp8 or nvfp4 training, and precision is bf16",
               fmt::format("add --precision fp8 or --fp4-format e2m1, or drop {}", flag));
  std::string list = file ? "" : *s.module_precision;
  if (file) {
    const TeQuantRun run{c.gemm_dtype(),
                         c.precision == Dtype::Fp8 ? std::string(strategy::to_string(c.fp8_recipe)) : "",
                         c.bf16_layers_at_start, c.bf16_layers_at_end};
    list = module_precision_of(load_te_precision_config(*s.te_precision_config_file), m, run);
    if (list.empty()) return;  // the file changes no module
  }
  if (c.fp8_param_gather || c.torch_modules())
    check.fail(key, list, "with quantized parameter gathering or torchtitan's modules is not modelled",
               c.fp8_param_gather ? fmt::format("drop --fp8-param-gather/--fp4-param-gather or {}", flag)
                                  : fmt::format("use --kernel-fusion fused, or drop {}", flag));
  for (const std::string& entry : names_in(list)) {
    const auto eq = entry.find('=');
    const std::string name = entry.substr(0, eq);
    const auto* known = std::find_if(std::begin(strategy::kLinearModuleNames), std::end(strategy::kLinearModuleNames),
                                     [&](const strategy::LinearModuleName& n) { return name == n.name; });
    if (eq == std::string::npos || known == std::end(strategy::kLinearModuleNames))
      check.fail(key, entry, "is not MODULE=FORMAT with MODULE attention, latent_proj, mamba_out_proj or mtp",
                 "write e.g. attention=bf16");
    const std::string format = entry.substr(eq + 1);
    std::optional<Dtype> dtype;
    if (format == "bf16") dtype = Dtype::Bf16;
    if (format == "mxfp8" && c.precision == Dtype::Nvfp4) dtype = Dtype::Mxfp8;
    if (!dtype)
      check.fail(key, entry,
                 format == "mxfp8" ? "runs MXFP8 inside NVFP4 training only (the one mix Megatron-Bridge's recipes use)"
                                   : "names no format: bf16, or mxfp8 under nvfp4",
                 "use bf16, or mxfp8 with --fp4-format e2m1");
    auto& slot = c.module_precision[static_cast<std::size_t>(known->module)];
    if (slot) check.fail(key, entry, "sets a module twice", "give each module once");
    const bool standard_attention = !m.multi_latent_attention && !m.has_compressed_attention();
    const bool has = known->module == strategy::LinearModule::Attention          ? standard_attention
                     : known->module == strategy::LinearModule::LatentProjection ? m.moe_latent_size > 0
                     : known->module == strategy::LinearModule::MambaOutProj     ? m.has_mamba_layers()
                                                                                 : m.mtp_num_layers > 0;
    if (!has)
      check.fail(key, entry,
                 known->module == strategy::LinearModule::Attention
                     ? fmt::format("is not modelled for {}, whose projections are other modules",
                                   m.multi_latent_attention ? "multi-latent attention" : "DeepSeek-V4's attention")
                     : fmt::format("names a module model {} does not have", m.name),
                 "drop it");
    slot = dtype;
  }
}

// Text fields must hold one of their choices (flags and files check this
// too; a StrategyInput built in code reaches here unchecked).
void check_choices(const Checker& check, const StrategyInput& s) {
  for (const auto& f : strategy_fields()) {
    if (f.choices.empty()) continue;
    const auto* member = std::get_if<std::optional<std::string> StrategyInput::*>(&f.member);
    if (member == nullptr || !(s.**member)) continue;
    const std::string& value = *(s.**member);
    if (std::find(f.choices.begin(), f.choices.end(), value) == f.choices.end())
      check.fail(f.field, value, fmt::format("is not one of {}", fmt::join(f.choices, ", ")),
                 fmt::format("use one of {}", fmt::join(f.choices, ", ")));
  }
}

// "tp·pp" or "tp·cp·pp", whichever the run uses.
std::string model_parallel_text(const strategy::ParallelConfig& c) {
  return c.cp > 1 ? fmt::format("tp·cp·pp = {}·{}·{} = {}", c.tp, c.cp, c.pp, c.tp * c.cp * c.pp)
                  : fmt::format("tp·pp = {}·{} = {}", c.tp, c.pp, c.tp * c.pp);
}

}  // namespace

ResolvedRun resolve_run(const model::ModelSpec& model, const StrategyInput& s) {
  const Checker check(s, model);
  check_choices(check, s);
  ResolvedRun run{model, {}};
  auto& m = run.model;
  auto& c = run.parallel;

  m.seq_length = check.bounded(s.seq_length, model.seq_length, "seq_length", kMaxSeq);
  c.tp = check.bounded(s.tp, 1, "tp", kMaxGpus);
  c.pp = check.bounded(s.pp, 1, "pp", kMaxGpus);
  const std::string attention = s.attention_backend.value_or("flash");
  c.attention = named(attention,
                      std::array{strategy::AttentionBackend::Flash, strategy::AttentionBackend::Unfused,
                                 strategy::AttentionBackend::Cudnn, strategy::AttentionBackend::Flash2,
                                 strategy::AttentionBackend::Triton},
                      "attention backend");
  std::string precision = s.precision.value_or("bf16");
  if (s.fp4_format) {
    if (s.precision && *s.precision != "nvfp4")
      check.fail("fp4_format", *s.fp4_format,
                 fmt::format("trains in FP4, which excludes precision {} (Megatron-Core: fp4 and fp8 are exclusive)",
                             *s.precision),
                 "drop --precision or --fp4-format");
    precision = "nvfp4";
  }
  c.precision = named(precision, std::array{Dtype::Bf16, Dtype::Fp8, Dtype::Nvfp4}, "precision");
  if (s.fp4_recipe && c.precision != Dtype::Nvfp4)
    check.fail("fp4_recipe", *s.fp4_recipe, fmt::format("needs FP4 training (precision is {})", precision),
               "add --fp4-format e2m1, or drop --fp4-recipe");
  if (s.fp8_recipe && c.precision != Dtype::Fp8)
    check.fail("fp8_recipe", *s.fp8_recipe, fmt::format("needs precision fp8 (precision is {})", precision),
               "add --precision fp8, or drop --fp8-recipe");
  c.kernel_fusion =
      named(s.kernel_fusion.value_or("fused"),
            std::array{strategy::KernelFusion::Fused, strategy::KernelFusion::Eager, strategy::KernelFusion::Compiled},
            "kernel fusion");
  check_torchao_float8(check, c, s, precision);
  if (c.torch_modules() && (m.is_moe() || m.multi_latent_attention || m.is_hybrid()))
    check.fail("kernel_fusion", *s.kernel_fusion,
               fmt::format("is modelled for dense models with standard attention (torchtitan's Llama code); model {} "
                           "has {}",
                           m.name,
                           m.is_hybrid() ? "a hybrid layer pattern"
                           : m.is_moe()  ? "experts"
                                         : "multi-latent attention"),
               "use --kernel-fusion fused");
  // torchao's only dynamic recipe scales per tensor; Megatron's default is delayed.
  c.fp8_recipe =
      named(s.fp8_recipe.value_or(c.kernel_fusion == strategy::KernelFusion::Compiled ? "tensorwise" : "delayed"),
            std::array{strategy::Fp8Recipe::Delayed, strategy::Fp8Recipe::Tensorwise, strategy::Fp8Recipe::Blockwise,
                       strategy::Fp8Recipe::Mxfp8, strategy::Fp8Recipe::Rowwise},
            "FP8 recipe");
  if (c.fp8_recipe == strategy::Fp8Recipe::Rowwise && !c.torch_modules())
    check.fail("fp8_recipe", "rowwise",
               "is torchao's Float8 recipe, modelled under torchtitan's modules (--kernel-fusion compiled); "
               "Transformer Engine's are delayed, tensorwise, blockwise and mxfp8",
               "add --kernel-fusion compiled, or use one of Transformer Engine's recipes");
  check_model_splits(check, m, c, s);
  if (s.flash_attn_cross_entropy.value_or(false) && c.torch_modules())
    check.fail_flag("flash_attn_cross_entropy",
                    "contradicts --kernel-fusion eager or compiled, whose loss is torchtitan's F.cross_entropy",
                    "drop one of the two");
  // torchtitan's context parallelism is PyTorch's (context_parallel:
  // workload/layer_torch_cp.cpp), whose keys and values travel as the
  // rotate method says; Megatron-Core's ring has no such choice.
  if (s.cp_rotate_method) {
    c.cp_rotate_method =
        named(*s.cp_rotate_method, std::array{strategy::CpRotateMethod::AllGather, strategy::CpRotateMethod::AllToAll},
              "context-parallel rotate method");
    if (c.cp == 1)
      check.fail("cp_rotate_method", *s.cp_rotate_method, "needs context parallelism (cp is 1)",
                 "add --cp, or drop --context-parallel-rotate-method");
    else if (!c.torch_modules())
      check.fail("cp_rotate_method", *s.cp_rotate_method,
                 "applies to PyTorch's context parallelism (--kernel-fusion eager or compiled); with fused kernels "
                 "--cp is Megatron-Core's ring, which passes keys and values round",
                 "drop --context-parallel-rotate-method");
  }
  // PyTorch balances causal work by giving each rank two chunks and refuses
  // a load-balanced ring without the causal mask.
  if (c.cp > 1 && c.torch_modules() && !m.causal)
    check.fail("cp", c.cp,
               fmt::format("with PyTorch's context parallelism needs a causal model (its load balancing requires "
                           "is_causal); {} is not causal",
                           m.name),
               "use --cp 1");
  if (c.pp > m.num_layers)
    check.fail("pp", c.pp,
               fmt::format("exceeds num_layers = {} (model {}): every stage needs a layer", m.num_layers, m.name),
               fmt::format("use at most {} pipeline stages", m.num_layers));

  const std::int64_t model_parallel = c.tp * c.cp * c.pp;
  if (!s.gpus && !s.dp)
    throw ConfigError("the number of GPUs is not set; give --gpus N (or --data-parallel-size, "
                      "from which GPUs = tp·cp·pp·dp)");
  if (s.gpus) {
    c.world_size = check.bounded(s.gpus, 1, "gpus", kMaxGpus);
    if (c.world_size % model_parallel != 0)
      check.fail("gpus", c.world_size,
                 fmt::format("is not a multiple of {}", model_parallel_text(c)),
                 c.cp > 1 ? "choose tp, cp and pp whose product divides the GPU count"
                          : "choose tp and pp whose product divides the GPU count");
    c.dp = c.world_size / model_parallel;
    if (s.dp && *s.dp != c.dp)
      check.fail("dp", *s.dp,
                 c.cp > 1 ? fmt::format("does not match the world size: gpus = {} ≠ tp·cp·pp·dp = {}·{}·{}·{} = {}",
                                        c.world_size, c.tp, c.cp, c.pp, *s.dp, model_parallel * *s.dp)
                          : fmt::format("does not match the world size: gpus = {} ≠ tp·pp·dp = {}·{}·{} = {}",
                                        c.world_size, c.tp, c.pp, *s.dp, model_parallel * *s.dp),
                 fmt::format("set --dp {} or omit --dp to derive it", c.dp));
  } else {
    c.dp = check.bounded(s.dp, 1, "dp", kMaxGpus);
    c.world_size = model_parallel * c.dp;
    if (c.world_size > kMaxGpus)
      check.fail("dp", c.dp, fmt::format("makes tp·cp·pp·dp = {} GPUs, more than {}", c.world_size, kMaxGpus),
                 "use fewer GPUs");
  }
  if (m.is_moe() && (c.tp * c.cp * c.dp) % (c.expert_tp * c.ep) != 0)
    check.fail("ep", c.ep,
               fmt::format("times expert_tp = {} must divide the {} ranks of a stage (tp·cp·dp = {}·{}·{}), "
                           "which MoE layers lay out as expert_tp·ep·expert_dp",
                           c.expert_tp, c.tp * c.cp * c.dp, c.tp, c.cp, c.dp),
               "choose ep and expert_tp whose product divides tp·cp·dp");

  c.sequence_parallel = s.sequence_parallel.value_or(false);
  if (c.sequence_parallel && c.tp == 1)
    check.fail_flag("sequence_parallel", "needs tensor parallelism (it splits the sequence over the TP ranks)",
                    "set --tp > 1 or drop --sequence-parallel");
  if (c.sequence_parallel && (m.seq_length / c.cp) % c.tp != 0)
    check.fail("tp", c.tp,
               fmt::format("must divide the {} tokens of a sequence on one CP rank under sequence parallelism",
                           m.seq_length / c.cp),
               "choose a sequence length or tp that divide");
  if (s.tp_comm_overlap.value_or(false) && !c.sequence_parallel)
    check.fail_flag("tp_comm_overlap", "needs --sequence-parallel (its all-gathers and reduce-scatters are what it overlaps)",
                    "add --sequence-parallel or drop --tp-comm-overlap");
  if (s.tp_comm_overlap.value_or(false) && !strategy::quantization_of(c).userbuffers)
    check.fail_flag("tp_comm_overlap",
                    fmt::format("cannot carry {}-scaled tensors: Transformer Engine's userbuffers take bf16, "
                                "per-tensor FP8 and MXFP8 only (\"Unsupported quantizer for Userbuffers\")",
                                c.precision == Dtype::Nvfp4 ? "nvfp4" : strategy::to_string(c.fp8_recipe)),
                    "drop --tp-comm-overlap or choose another --fp8-recipe");
  if (m.is_moe() && c.tp > 1 && !c.sequence_parallel)
    check.fail("tp", c.tp, "with a mixture-of-experts model needs --sequence-parallel (as Megatron-Core requires)",
               "add --sequence-parallel");

  check_pipeline(check, m, c, s);
  check_memory_options(check, c, s);
  check_hsdp(check, m, c, s);
  check_optimizer(check, c, s);
  check_precision_aware_optimizer(check, c, s);
  check_optimizer_instances(check, m, c, s);
  check_recompute_modules(check, m, c, s);
  check_moe_overlap(check, m, c, s);
  check_activation_offloading(check, m, c, s);
  check_cuda_graphs(check, m, c, s);
  check_fp8_attention(check, c);
  check_bf16_layers(check, m, c, s);
  check_module_precision(check, m, c, s);

  c.rank_order = s.rank_order.value_or(strategy::kDefaultRankOrder);
  try {
    const strategy::RankLayout dense(c.tp, c.cp, 1, c.dp, c.pp, c.rank_order);
    if (m.is_moe()) {
      const strategy::RankLayout expert(c.expert_tp, 1, c.ep, c.expert_dp(), c.pp, c.rank_order);
    }
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", s.where("rank_order"), e.what()));
  }

  if (!s.global_batch_size)
    throw ConfigError("the global batch size is not set; give --global-batch-size B "
                      "(sequences per training step over all data-parallel replicas)");
  c.global_batch_size = check.bounded(s.global_batch_size, 1, "global_batch_size", kMaxBatch);
  if (c.global_batch_size % c.dp != 0)
    check.fail("global_batch_size", c.global_batch_size, fmt::format("is not divisible by dp = {}", c.dp),
               fmt::format("use a multiple of {}", c.dp));
  const std::int64_t per_replica = c.global_batch_size / c.dp;
  if (c.schedule == strategy::ScheduleKind::Naive) {
    // Plain model parallelism runs each replica's whole batch as one micro-batch.
    if (s.micro_batch_size && *s.micro_batch_size != per_replica)
      check.fail("micro_batch_size", *s.micro_batch_size,
                 fmt::format("conflicts with --schedule naive, which runs the whole per-replica "
                             "batch (global {} / dp {} = {}) as one micro-batch",
                             c.global_batch_size, c.dp, per_replica),
                 fmt::format("omit --micro-batch-size or set it to {}", per_replica));
    c.micro_batch_size = per_replica;
  } else {
    c.micro_batch_size = check.bounded(s.micro_batch_size, 1, "micro_batch_size", kMaxBatch);
    if (per_replica % c.micro_batch_size != 0)
      check.fail("global_batch_size", c.global_batch_size,
                 fmt::format("is not divisible by micro_batch_size·dp = {}·{} = {}", c.micro_batch_size, c.dp,
                             c.micro_batch_size * c.dp),
                 fmt::format("use a multiple of {}", c.micro_batch_size * c.dp));
  }
  strategy::ScheduleShape batches;
  batches.pp = c.pp;
  batches.vpp = c.vpp;
  batches.microbatches = c.num_microbatches();
  batches.global_batch_size = c.global_batch_size;
  batches.sequences_per_microbatch_step = c.micro_batch_size * c.dp;
  enforce(check, strategy::describe(c.schedule).check_microbatches(batches));
  return run;
}

}  // namespace ptsim::config

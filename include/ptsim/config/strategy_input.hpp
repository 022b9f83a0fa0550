// StrategyInput: a parallel strategy as the user gave it — command-line flags
// or a strategy file with the same keys — before defaults and checks. Each
// value remembers where it came from, so that errors point at the flag or key.
//
// One table (strategy_fields) names every field once: its JSON key (Megatron-LM's
// argument name), short alias, command-line flag, type and help. The strategy
// file reader, the flag parser and merge all walk that table.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>
#include "ptsim/config/input_files.hpp"

namespace ptsim::config {

struct StrategyInput {
  std::optional<std::int64_t> gpus;
  std::optional<std::int64_t> tp;
  std::optional<std::int64_t> pp;
  std::optional<std::int64_t> dp;
  std::optional<std::int64_t> cp;
  std::optional<std::int64_t> ep;
  std::optional<std::int64_t> expert_tp;
  std::optional<std::int64_t> vpp;
  std::optional<std::int64_t> layers_per_virtual_stage;
  std::optional<std::int64_t> first_stage_layers;
  std::optional<std::int64_t> last_stage_layers;
  std::optional<std::string> pipeline_layout;  // Megatron-Core's --pipeline-model-parallel-layout
  std::optional<bool> account_for_embedding;   // the embedding takes a layer's place in the split
  std::optional<bool> account_for_loss;        // so does the loss
  std::optional<std::int64_t> micro_batch_size;
  std::optional<std::int64_t> global_batch_size;
  std::optional<std::int64_t> seq_length;
  std::optional<std::string> schedule;   // naive | gpipe | 1f1b | interleaved | zb-h1 | zb-h2 | dualpipe
  std::optional<std::string> recompute;  // none | selective | full
  std::optional<std::int64_t> recompute_num_layers;
  std::optional<std::string> recompute_modules;  // Megatron-Core's names, comma-separated ("" reruns nothing)
  std::optional<bool> sequence_parallel;
  std::optional<std::int64_t> zero;      // 0 … 3
  std::optional<bool> distributed_optimizer;
  std::optional<bool> overlap_grad_reduce;
  std::optional<bool> overlap_param_gather;
  std::optional<bool> fp8_param_gather;
  std::optional<bool> fp4_param_gather;
  std::optional<bool> grad_reduce_in_bf16;
  std::optional<bool> zero3_blocking;
  std::optional<bool> tp_comm_overlap;
  std::optional<bool> scatter_gather_pipeline;
  std::optional<bool> batch_p2p_sync;
  std::optional<bool> overlap_p2p_comm;
  std::optional<bool> no_async_tp_allreduce;
  std::optional<bool> no_gradient_accumulation_fusion;
  std::optional<bool> cross_entropy_loss_fusion;
  std::optional<bool> flash_attn_cross_entropy;
  std::optional<bool> fp8_dot_product_attention;  // Megatron-Core's TransformerConfig field
  std::optional<double> moe_capacity_factor;
  std::optional<double> moe_load_imbalance;                // the busiest EP rank's routed tokens over an even share
  std::optional<std::string> moe_token_dispatcher_type;    // alltoall | allgather | flex
  std::optional<std::string> moe_flex_dispatcher_backend;  // deepep | hybridep (with flex)
  std::optional<std::int64_t> moe_flex_dispatcher_num_sms;  // SMs the flex exchange's kernels hold
  std::optional<bool> overlap_moe_expert_parallel_comm;    // combined 1F1B: dispatch/combine under compute
  std::optional<bool> delay_wgrad_compute;                 // experts' wgrad beside the backward dispatch
  std::optional<double> host_overhead_us;
  std::optional<std::string> cuda_graph_impl;     // none | local | transformer_engine | full_iteration
  std::optional<std::string> cuda_graph_modules;  // Megatron-Core's CudaGraphModule names, comma-separated
  std::optional<double> memory_headroom_gib;
  std::optional<std::string> rank_order;  // e.g. tp-cp-ep-dp-pp
  std::optional<std::string> attention_backend;  // flash | unfused | cudnn | flash2
  std::optional<std::string> kernel_fusion;      // fused | eager | compiled
  std::optional<std::string> cp_rotate_method;   // allgather | alltoall: PyTorch's context parallelism
  std::optional<std::string> fsdp;               // fsdp1 | fsdp2: PyTorch FSDP as the data parallelism
  std::optional<std::string> optimizer_impl;     // fused | foreach: how Adam runs over FSDP's shards
  std::optional<std::string> optimizer;          // adam | muon | dist_muon (Megatron-Core's --optimizer)
  std::optional<std::int64_t> muon_num_ns_steps;     // Newton-Schulz iterations of a Muon update
  std::optional<std::string> muon_tp_mode;           // blockwise | duplicated
  std::optional<bool> precision_aware_optimizer;     // Megatron-Core's --use-precision-aware-optimizer
  std::optional<std::string> main_params_dtype;      // with it: fp32 | fp16 (the master weights)
  std::optional<std::string> exp_avg_dtype;          // with it: fp32 | fp16 | bf16 | fp8 (Adam's first moment)
  std::optional<std::string> exp_avg_sq_dtype;       // with it: fp32 | fp16 | bf16 | fp8 (its second moment)
  std::optional<std::string> reshard_after_forward;  // default | always | never (with fsdp)
  std::optional<std::int64_t> dp_shard;              // HSDP: ranks a parameter is sharded over (torchtitan's name)
  std::optional<std::int64_t> dp_replicate;          // HSDP: replicas of each shard group
  std::optional<bool> megatron_fsdp;                 // Megatron-Core's --use-megatron-fsdp
  std::optional<std::string> dp_sharding_strategy;   // no_shard | optim | optim_grads | optim_grads_params
  std::optional<std::string> outer_dp_sharding_strategy;  // no_shard | optim (Hybrid-FSDP)
  std::optional<std::int64_t> optimizer_instances;        // --num-distributed-optimizer-instances
  std::optional<std::string> fsdp_main_params_dtype;      // Megatron-FSDP's: fp32 (the one modelled)
  std::optional<std::string> fsdp_main_grads_dtype;       // Megatron-FSDP's: auto | bf16 | fp32
  std::optional<std::string> fsdp_grad_comm_dtype;        // Megatron-FSDP's: auto | bf16 | fp32
  std::optional<bool> first_last_layers_bf16;             // --first-last-layers-bf16
  std::optional<std::int64_t> bf16_layers_at_start;       // --num-layers-at-start-in-bf16
  std::optional<std::int64_t> bf16_layers_at_end;         // --num-layers-at-end-in-bf16
  std::optional<std::string> module_precision;            // MODULE=FORMAT,… (attention, latent_proj, …)
  std::optional<std::string>
      te_precision_config_file;  // Megatron-LM's YAML of module formats, read into module_precision
  std::optional<bool> activation_offloading;              // --fine-grained-activation-offloading
  std::optional<std::string> offload_modules;             // Megatron-Core's names, comma-separated
  std::optional<std::int64_t> min_offloaded_tensor_size;  // elements
  std::optional<std::string> precision;          // bf16 | fp8 | nvfp4
  std::optional<std::string> fp8_recipe;         // delayed | tensorwise | blockwise | mxfp8 (with precision fp8)
  std::optional<std::string> fp4_format;         // e2m1: FP4 training (precision nvfp4), Megatron-Core's --fp4-format
  std::optional<std::string> fp4_recipe;         // nvfp4 (with FP4 training)
  /// Field name ("tp", "global_batch_size", …) → how the user wrote it
  /// ("--tensor-model-parallel-size/--tp", "s.json: /tp").
  std::map<std::string, std::string> origin;

  /// Where `field` came from, or its flag name when the user did not set it.
  std::string where(const std::string& field) const;
};

/// One strategy field: where it lives in StrategyInput and how users name it.
struct StrategyField {
  using Member = std::variant<std::optional<std::int64_t> StrategyInput::*,
                              std::optional<double> StrategyInput::*,
                              std::optional<bool> StrategyInput::*,
                              std::optional<std::string> StrategyInput::*>;
  const char* field;       // canonical name, as in StrategyInput and error messages
  const char* key;         // JSON key and long flag (with '-' for '_'): Megatron-LM's name
  const char* alias;       // short JSON key and flag, or "" (e.g. "tp")
  Member member;
  std::int64_t min = 1;    // integers: accepted range; numbers: 0 admits zero, else positive
  std::int64_t max = std::int64_t{1} << 40;
  std::vector<std::string_view> choices = {};  // strings: allowed values (empty: free text)
  const char* value_name = "";  // in --help, e.g. "T"
  const char* help = "";

  /// "--tensor-model-parallel-size/--tp".
  std::string flags() const;
};

/// Every field, in the order --help lists them.
std::span<const StrategyField> strategy_fields();

/// Reads a strategy file: an object whose keys are strategy_fields()' keys or aliases.
StrategyInput load_strategy(const std::string& path, InputFiles& inputs);

/// Parses a strategy object already read; `where` names the file and
/// `path` the object's JSON pointer in it (for messages).
StrategyInput parse_strategy(const nlohmann::json& object, const std::string& where, const std::string& path = "");

/// Values set in `overrides` replace those of `base` (flags override a file).
StrategyInput merge(StrategyInput base, const StrategyInput& overrides);

}  // namespace ptsim::config

// A launch line's parallelism, batch, precision, recomputation, attention
// and overlap flags → ptsim's strategy JSON (see megatron_args.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <optional>
#include <string>
#include <utility>

#include "internal/megatron_launch_flags.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::config::internal {

using nlohmann::json;

namespace {

// Megatron flags that set a ptsim strategy key with the same meaning: the
// key is their name, underscores for hyphens (ptsim's strategy keys are
// Megatron's names).
constexpr std::array kSameStrategyKey = {"--tensor-model-parallel-size",
                                         "--pipeline-model-parallel-size",
                                         "--context-parallel-size",
                                         "--expert-model-parallel-size",
                                         "--expert-tensor-parallel-size",
                                         "--num-layers-per-virtual-pipeline-stage",
                                         "--decoder-first-pipeline-num-layers",
                                         "--decoder-last-pipeline-num-layers",
                                         "--pipeline-model-parallel-layout",
                                         "--account-for-embedding-in-pipeline-split",
                                         "--account-for-loss-in-pipeline-split",
                                         "--micro-batch-size",
                                         "--global-batch-size",
                                         "--moe-expert-capacity-factor",
                                         "--moe-token-dispatcher-type",
                                         "--moe-flex-dispatcher-backend",
                                         "--moe-flex-dispatcher-num-sms",
                                         "--overlap-moe-expert-parallel-comm",
                                         "--delay-wgrad-compute",
                                         "--sequence-parallel",
                                         "--use-distributed-optimizer",
                                         "--overlap-grad-reduce",
                                         "--overlap-param-gather",
                                         "--fp8-param-gather",
                                         "--fp4-param-gather",
                                         "--grad-reduce-in-bf16",
                                         "--use-precision-aware-optimizer",
                                         "--main-params-dtype",
                                         "--exp-avg-dtype",
                                         "--exp-avg-sq-dtype",
                                         "--tp-comm-overlap",
                                         "--cross-entropy-loss-fusion",
                                         "--te-precision-config-file",
                                         "--no-gradient-accumulation-fusion",
                                         "--use-megatron-fsdp",
                                         "--data-parallel-sharding-strategy",
                                         "--outer-dp-sharding-strategy",
                                         "--num-distributed-optimizer-instances",
                                         "--megatron-fsdp-main-params-dtype",
                                         "--megatron-fsdp-main-grads-dtype",
                                         "--megatron-fsdp-grad-comm-dtype",
                                         "--first-last-layers-bf16",
                                         "--num-layers-at-start-in-bf16",
                                         "--num-layers-at-end-in-bf16",
                                         "--fine-grained-activation-offloading",
                                         "--min-offloaded-tensor-size"};

// Flags Megatron-LM reads only under --use-megatron-fsdp (its
// DistributedDataParallelConfig passes them to Megatron-FSDP alone).
constexpr std::array kMegatronFsdpOnly = {"--data-parallel-sharding-strategy", "--outer-dp-sharding-strategy",
                                          "--megatron-fsdp-main-params-dtype", "--megatron-fsdp-main-grads-dtype",
                                          "--megatron-fsdp-grad-comm-dtype"};

std::string key_of(std::string_view flag) {
  std::string key(flag.substr(2));
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

// CUDA graphs as megatron/training/arguments.py at d98e8a64dd reads them:
// --cuda-graph-impl; the per-layer modules as --cuda-graph-modules or its
// hidden predecessor --cuda-graph-scope, in which "full_iteration" still sets
// --cuda-graph-impl full_iteration and "full" means whole layers
// (cuda_graph_config.py); --enable-cuda-graph and --external-cuda-graph, the
// deprecated spellings of local and transformer_engine, which a line cannot
// combine with --cuda-graph-impl.
void cuda_graphs(LaunchFlags& flags, json& strategy) {
  std::string impl = "none";
  if (flags.has("--cuda-graph-impl"))
    impl = choice_of(flags.get("--cuda-graph-impl"), {"none", "local", "transformer_engine", "full_iteration"});
  for (const auto& [flag, named] :
       {std::pair{"--enable-cuda-graph", "local"}, std::pair{"--external-cuda-graph", "transformer_engine"}}) {
    if (!flags.has(flag)) continue;
    if (flags.has("--cuda-graph-impl") || (flags.has("--enable-cuda-graph") && flags.has("--external-cuda-graph")))
      throw ConfigError(
          fmt::format("{}: {} cannot be combined with --cuda-graph-impl or the other deprecated CUDA "
                      "graph flag, as Megatron-LM's arguments.py asserts; give --cuda-graph-impl alone",
                      kMegatronWhere, flag));
    impl = named;
  }
  if (flags.has("--cuda-graph-modules") && flags.has("--cuda-graph-scope"))
    throw ConfigError(
        fmt::format("{}: --cuda-graph-scope and --cuda-graph-modules cannot be used together "
                    "(Megatron-LM's arguments.py); --cuda-graph-scope is the deprecated name",
                    kMegatronWhere));
  const char* list_flag = flags.has("--cuda-graph-scope") ? "--cuda-graph-scope" : "--cuda-graph-modules";
  std::vector<std::string> modules;
  if (flags.has(list_flag)) {
    const std::vector<std::string>& given = flags.get(list_flag).values;
    for (const std::string& m : given) {
      if (m == "full") {
        if (given.size() != 1)
          throw ConfigError(fmt::format("{}: {} full cannot be used with other modules", kMegatronWhere, list_flag));
      } else if (m == "full_iteration") {
        if (impl != "none" && impl != "local" && impl != "full_iteration")
          throw ConfigError(
              fmt::format("{}: {} full_iteration cannot be combined with --cuda-graph-impl {} "
                          "(Megatron-Core's cuda_graph_config.py)",
                          kMegatronWhere, list_flag, impl));
        impl = "full_iteration";
      } else if (m != "full_iteration_inference") {  // inference graphs: not a training step's
        modules.push_back(m);
      }
    }
  }
  if (impl != "none") strategy["cuda_graph_impl"] = impl;
  if (!modules.empty()) strategy["cuda_graph_modules"] = modules;
  for (const char* f : {"--cuda-graph-impl", "--cuda-graph-modules", "--cuda-graph-scope", "--enable-cuda-graph",
                        "--external-cuda-graph"})
    flags.take(f);
}

}  // namespace

json megatron_strategy_json(LaunchFlags& flags, std::vector<std::string>& notes) {
  json strategy = json::object();
  const std::int64_t tp =
      flags.has("--tensor-model-parallel-size") ? integer_of(flags.get("--tensor-model-parallel-size")) : 1;
  // ---- the strategy ----
  if (!flags.has("--use-megatron-fsdp"))
    for (const char* flag : kMegatronFsdpOnly)
      if (flags.has(flag)) {
        flags.take(flag);
        notes.push_back(
            fmt::format("{} without --use-megatron-fsdp: Megatron-LM reads it only for Megatron-FSDP, "
                        "and ptsim ignores it too",
                        flag));
      }
  // Megatron-Core reads the bf16 layer counts only under
  // --first-last-layers-bf16, and that only under fp8 or fp4 training.
  const bool quantized = flags.has("--fp8-format") || flags.has("--fp4-format");
  for (const char* flag : {"--first-last-layers-bf16", "--num-layers-at-start-in-bf16", "--num-layers-at-end-in-bf16"})
    if (flags.has(flag) && (!quantized || !flags.has("--first-last-layers-bf16"))) {
      flags.take(flag);
      notes.push_back(fmt::format("{} without {}: Megatron-LM leaves every layer as it is, and ptsim does too", flag,
                                  quantized ? "--first-last-layers-bf16" : "--fp8-format or --fp4-format"));
    }
  for (const char* flag : kSameStrategyKey) {
    if (!flags.has(flag) || flags.taken(flag)) continue;
    const GivenFlag& g = flags.get(flag);
    const std::string key = key_of(flag);
    if (g.values.empty()) {
      strategy[key] = true;
    } else if (key == "pipeline_model_parallel_layout" || key == "moe_token_dispatcher_type" ||
               key == "moe_flex_dispatcher_backend" || key == "data_parallel_sharding_strategy" ||
               key == "outer_dp_sharding_strategy" || key.starts_with("megatron_fsdp_") ||
               key == "te_precision_config_file" || key == "main_params_dtype" || key == "exp_avg_dtype" ||
               key == "exp_avg_sq_dtype") {
      strategy[key] = g.values.at(0);
    } else if (key == "moe_expert_capacity_factor") {
      strategy[key] = number_of(g);
    } else {
      strategy[key] = integer_of(g);
    }
    flags.take(flag);
  }
  // Megatron-LM takes the offloaded modules as a list.
  if (flags.has("--offload-modules")) {
    strategy["offload_modules"] = flags.get("--offload-modules").values;
    flags.take("--offload-modules");
  }
  // Megatron-Core routes its deprecated per-library SM counts to
  // moe_flex_dispatcher_num_sms when that is unset and refuses two that differ
  // (TransformerConfig.__post_init__ at d98e8a64dd).
  std::optional<std::pair<std::string, std::int64_t>> deprecated_sms;
  for (const char* flag : {"--moe-deepep-num-sms", "--moe-hybridep-num-sms"}) {
    if (!flags.has(flag)) continue;
    const std::int64_t sms = integer_of(flags.get(flag));
    if (deprecated_sms && deprecated_sms->second != sms)
      throw ConfigError(
          fmt::format("{}: {} {} and {} {} conflict (Megatron-Core refuses two SM counts); give "
                      "--moe-flex-dispatcher-num-sms once instead",
                      kMegatronWhere, deprecated_sms->first, deprecated_sms->second, flag, sms));
    deprecated_sms = {flag, sms};
    flags.take(flag);
  }
  if (deprecated_sms && !strategy.contains("moe_flex_dispatcher_num_sms"))
    strategy["moe_flex_dispatcher_num_sms"] = deprecated_sms->second;
  // Benchmarks force balanced routing: the busiest EP rank gets an even share.
  if (flags.has("--moe-router-force-load-balancing")) {
    strategy["moe_load_imbalance"] = 1.0;
    flags.take("--moe-router-force-load-balancing");
  }
  // The optimizer: AdamW, or Muon over Megatron-Core's emerging optimizers.
  if (flags.has("--optimizer")) {
    strategy["optimizer"] = choice_of(flags.get("--optimizer"), {"adam", "muon", "dist_muon"},
                                      "sgd, lion, soap and adaptive_muon are not modelled");
    flags.take("--optimizer");
  }
  if (flags.has("--muon-num-ns-steps")) {
    strategy["muon_num_ns_steps"] = integer_of(flags.get("--muon-num-ns-steps"));
    flags.take("--muon-num-ns-steps");
  }
  if (flags.has("--muon-tp-mode")) {
    strategy["muon_tp_mode"] =
        choice_of(flags.get("--muon-tp-mode"), {"blockwise", "duplicated"}, "distributed is not modelled");
    flags.take("--muon-tp-mode");
  }
  // Megatron's own name for the model chunks per stage (arguments.py sets
  // virtual_pipeline_model_parallel_size from it), one of three ways to
  // give them that arguments.py does not let a line combine.
  const char* const chunk_flags[] = {"--num-layers-per-virtual-pipeline-stage",
                                     "--num-virtual-stages-per-pipeline-rank", "--pipeline-model-parallel-layout"};
  if (std::count_if(std::begin(chunk_flags), std::end(chunk_flags), [&](const char* f) { return flags.has(f); }) > 1)
    throw ConfigError(fmt::format("{}: give at most one of {}, as Megatron-LM's arguments.py requires", kMegatronWhere,
                                  fmt::join(chunk_flags, ", ")));
  if (flags.has("--num-virtual-stages-per-pipeline-rank")) {
    strategy["virtual_pipeline_model_parallel_size"] = integer_of(flags.get("--num-virtual-stages-per-pipeline-rank"));
    flags.take("--num-virtual-stages-per-pipeline-rank");
  }
  // arguments.py validate_args: "Disabling sequence parallelism because
  // tensor model parallelism is disabled".
  if (tp == 1 && strategy.contains("sequence_parallel")) {
    strategy.erase("sequence_parallel");
    notes.push_back(
        "--sequence-parallel with --tensor-model-parallel-size 1: Megatron-LM disables sequence "
        "parallelism (validate_args), and so does ptsim");
  }
  // Precision: fp16 runs on bf16's tensor cores at its rate; FP8 as
  // Transformer Engine runs it, with the recipes ptsim models.
  for (const char* f : {"--bf16", "--fp16"}) flags.take(f);
  if (flags.has("--fp8-format")) {
    choice_of(flags.get("--fp8-format"), {"e4m3", "hybrid"});
    strategy["precision"] = "fp8";
    if (flags.has("--fp8-recipe"))
      strategy["fp8_recipe"] = choice_of(flags.get("--fp8-recipe"), {"delayed", "tensorwise", "blockwise", "mxfp8"},
                                         "custom is not modelled");
  }
  // MXFP8's parameter gather through the gradient buffer is the only one
  // Megatron-Core has (arguments.py), and what ptsim models for it.
  for (const char* f : {"--fp8-format", "--fp8-recipe", "--fp8-amax-history-len", "--fp8-amax-compute-algo",
                        "--fp8-margin", "--fp8-interval", "--reuse-grad-buf-for-mxfp8-param-ag"})
    flags.take(f);
  // FP4: Transformer Engine's NVFP4 recipe (Megatron-Core: fp4 excludes fp8).
  if (flags.has("--fp4-format")) {
    choice_of(flags.get("--fp4-format"), {"e2m1"});
    if (strategy.contains("precision"))
      throw ConfigError(fmt::format("{}: --fp4-format and --fp8-format both given; Megatron-Core trains in one of them",
                                    kMegatronWhere));
    strategy["fp4_format"] = "e2m1";
    if (flags.has("--fp4-recipe"))
      strategy["fp4_recipe"] = choice_of(flags.get("--fp4-recipe"), {"nvfp4"}, "custom is not modelled");
  }
  for (const char* f : {"--fp4-format", "--fp4-recipe"}) flags.take(f);
  // Recomputation: selective (--recompute-activations is its old name), or
  // full by layer: uniform with one layer a chunk (every layer
  // checkpointed) or block (the first N layers of each stage).
  std::string granularity = flags.has("--recompute-activations") ? "selective" : "none";
  if (flags.has("--recompute-granularity"))
    granularity = choice_of(flags.get("--recompute-granularity"), {"full", "selective"});
  if (granularity == "full") {
    if (!flags.has("--recompute-method"))
      throw ConfigError(
          fmt::format("{}: --recompute-granularity full needs --recompute-method uniform or block", kMegatronWhere));
    const std::string method = choice_of(flags.get("--recompute-method"), {"uniform", "block"});
    const std::int64_t layers =
        flags.has("--recompute-num-layers") ? integer_of(flags.get("--recompute-num-layers")) : 1;
    if (method == "uniform" && layers != 1)
      throw ConfigError(
          fmt::format("{}: --recompute-method uniform --recompute-num-layers {}: ptsim checkpoints "
                      "every layer (uniform with 1) or the first N of each stage (block); chunks of "
                      "several layers are not modelled",
                      kMegatronWhere, layers));
    strategy["recompute"] = "full";
    if (method == "block") strategy["recompute_num_layers"] = layers;
  } else if (granularity == "selective") {
    strategy["recompute"] = "selective";
  }
  // What selective reruns (Megatron-Core's default: core_attn); the
  // deprecated --moe-layer-recompute asks for selective with moe added
  // (TransformerConfig.__post_init__). Without selective granularity the
  // modules are unused, as in Megatron-Core.
  if (flags.has("--moe-layer-recompute")) {
    if (granularity == "full")
      throw ConfigError(
          fmt::format("{}: --moe-layer-recompute cannot be combined with --recompute-granularity full "
                      "(Megatron-Core refuses it)",
                      kMegatronWhere));
    granularity = "selective";
    strategy["recompute"] = "selective";
  }
  if (granularity == "selective" && (flags.has("--recompute-modules") || flags.has("--moe-layer-recompute"))) {
    std::vector<std::string> modules = {"core_attn"};
    if (flags.has("--recompute-modules")) modules = flags.get("--recompute-modules").values;
    if (flags.has("--moe-layer-recompute") && std::find(modules.begin(), modules.end(), "moe") == modules.end())
      modules.push_back("moe");
    strategy["recompute_modules"] = modules;
  }
  for (const char* f : {"--recompute-activations", "--recompute-granularity", "--recompute-method",
                        "--recompute-num-layers", "--recompute-modules", "--moe-layer-recompute"})
    flags.take(f);
  // Attention kernels: Transformer Engine's backends.
  if (flags.has("--attention-backend")) {
    const std::string b = choice_of(flags.get("--attention-backend"), {"flash", "fused", "unfused", "local", "auto"});
    if (b == "fused") strategy["attention_backend"] = "cudnn";  // cuDNN's fused attention
    if (b == "unfused" || b == "local") strategy["attention_backend"] = "unfused";
    if (b == "flash") strategy["attention_backend"] = "flash";
    // auto: Transformer Engine picks; ptsim's default, fused flash-style kernels.
  }
  if (flags.has("--use-flash-attn")) strategy["attention_backend"] = "flash";
  flags.take("--attention-backend");
  flags.take("--use-flash-attn");
  if (flags.has("--transformer-impl"))
    choice_of(flags.get("--transformer-impl"), {"transformer_engine"}, "Megatron's local layers are not modelled");
  flags.take("--transformer-impl");
  // Megatron-Core: --overlap-p2p-communication is on unless turned off
  // (it applies to the interleaved schedule only), and the batched p2p
  // calls synchronize the device (batch_p2p_sync, True by default).
  strategy["overlap_p2p_comm"] = !flags.has("--no-overlap-p2p-communication");
  strategy["batch_p2p_sync"] = true;
  flags.take("--overlap-p2p-communication");
  flags.take("--no-overlap-p2p-communication");
  cuda_graphs(flags, strategy);
  // Megatron-Core's Torch-FSDP2 path (megatron/core/distributed/
  // torch_fully_sharded_data_parallel.py at d98e8a64dd): fully_shard on each
  // transformer layer and on the model, reshard_after_forward True unless
  // --torch-fsdp2-no-reshard-after-forward.
  if (flags.has("--use-torch-fsdp2")) {
    strategy["fsdp"] = "fsdp2";
    strategy["reshard_after_forward"] = flags.has("--torch-fsdp2-no-reshard-after-forward") ? "never" : "always";
  }
  flags.take("--use-torch-fsdp2");
  flags.take("--torch-fsdp2-no-reshard-after-forward");

  return strategy;
}

}  // namespace ptsim::config::internal

// A Megatron-LM launch line → model and strategy (see megatron_args.hpp).
//
// Each flag is looked up in Megatron's own flag list (internal/megatron_flags,
// generated from its source), which says how many values it takes; what it
// means to a step is decided here. The model and the strategy are assembled
// as ptsim's own JSON objects and read by parse_model and parse_strategy, so
// that their ranges, cross-checks and messages are the ones every other
// input gets.
#include "ptsim/config/megatron_args.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "internal/megatron_flags.hpp"
#include "ptsim/common/edit_distance.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/common/parse_number.hpp"
#include "ptsim/config/load_model.hpp"

namespace ptsim::config {

namespace {

using internal::MegatronArity;
using internal::MegatronFlag;
using nlohmann::json;

constexpr const char* kWhere = "the Megatron-LM arguments";

const MegatronFlag* find_flag(std::string_view name) {
  const auto flags = internal::megatron_flags();
  const auto it = std::lower_bound(flags.begin(), flags.end(), name,
                                   [](const MegatronFlag& f, std::string_view n) { return f.name < n; });
  return it != flags.end() && it->name == name ? &*it : nullptr;
}

[[noreturn]] void unknown_flag(const std::string& name) {
  std::string_view best;
  std::size_t best_distance = 0;
  for (const auto& f : internal::megatron_flags()) {
    const std::size_t d = edit_distance(name, f.name);
    if (best.empty() || d < best_distance) {
      best = f.name;
      best_distance = d;
    }
  }
  const bool close = !best.empty() && best_distance <= std::max<std::size_t>(2, name.size() / 4);
  throw ConfigError(fmt::format("{}: {} is not a flag of Megatron-LM's pretrain_gpt.py (its flags as of "
                                "NVIDIA/Megatron-LM {}){}",
                                kWhere, name, internal::megatron_flags_commit(),
                                close ? fmt::format("; did you mean {}?", best) : std::string()));
}

// A flag and the values it was given, in order of appearance.
struct Given {
  std::string name;
  std::vector<std::string> values;
};

std::vector<Given> tokenize(const std::vector<std::string>& args) {
  std::vector<Given> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& token = args[i];
    if (!token.starts_with("--") || token.size() == 2) {
      // argparse refuses it as well ("unrecognized arguments"); the usual
      // cause is a value with spaces split into words by an unquoted
      // "${ARGS[@]}" in a launch script.
      const std::string after =
          out.empty() ? std::string()
                      : fmt::format(" (it follows {} {}: a value with spaces must reach pretrain_gpt.py as one "
                                    "argument; quote it, and the array's expansion, \"${{ARGS[@]}}\")",
                                    out.back().name, fmt::join(out.back().values, " "));
      throw ConfigError(fmt::format("{}: '{}' is not a flag; pretrain_gpt.py takes --name [value] pairs (put "
                                    "only its arguments after '--', not the launcher or the script){}",
                                    kWhere, token, after));
    }
    const auto eq = token.find('=');
    Given g{token.substr(0, eq), {}};
    const MegatronFlag* flag = find_flag(g.name);
    if (flag == nullptr) unknown_flag(g.name);
    const bool inline_value = eq != std::string::npos;
    if (inline_value) g.values.push_back(token.substr(eq + 1));
    const auto next_is_value = [&] { return i + 1 < args.size() && !args[i + 1].starts_with("--"); };
    switch (flag->arity) {
      case MegatronArity::None:
        if (inline_value) throw ConfigError(fmt::format("{}: {} takes no value", kWhere, g.name));
        break;
      case MegatronArity::One:
        if (!inline_value) {
          if (!next_is_value()) throw ConfigError(fmt::format("{}: {} needs a value", kWhere, g.name));
          g.values.push_back(args[++i]);
        }
        break;
      case MegatronArity::Optional:
        if (!inline_value && next_is_value()) g.values.push_back(args[++i]);
        break;
      case MegatronArity::Many:
        while (next_is_value()) g.values.push_back(args[++i]);
        if (g.values.empty()) throw ConfigError(fmt::format("{}: {} needs one value or more", kWhere, g.name));
        break;
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::int64_t integer_of(const Given& g) {
  const std::string& v = g.values.at(0);
  const auto n = whole_number(v);
  if (!n) throw ConfigError(fmt::format("{}: {} {}: not a whole number", kWhere, g.name, v));
  return *n;
}

double number_of(const Given& g) {
  const std::string& v = g.values.at(0);
  const auto x = decimal_number(v);
  if (!x || !std::isfinite(*x)) throw ConfigError(fmt::format("{}: {} {}: not a number", kWhere, g.name, v));
  return *x;
}

std::string choice_of(const Given& g, std::initializer_list<std::string_view> accepted, const std::string& why = "") {
  const std::string& v = g.values.at(0);
  if (std::find(accepted.begin(), accepted.end(), v) == accepted.end())
    throw ConfigError(fmt::format("{}: {} {}: ptsim simulates {}{}", kWhere, g.name, v, fmt::join(accepted, ", "),
                                  why.empty() ? "" : "; " + why));
  return v;
}

// Megatron flags that set a ptsim strategy key with the same meaning: the
// key is their name, underscores for hyphens (ptsim's strategy keys are
// Megatron's names).
constexpr std::array kSameStrategyKey = {
    "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
    "--expert-model-parallel-size", "--expert-tensor-parallel-size", "--virtual-pipeline-model-parallel-size",
    "--num-layers-per-virtual-pipeline-stage", "--decoder-first-pipeline-num-layers",
    "--decoder-last-pipeline-num-layers", "--pipeline-model-parallel-layout", "--micro-batch-size",
    "--global-batch-size", "--moe-expert-capacity-factor", "--sequence-parallel", "--use-distributed-optimizer",
    "--overlap-grad-reduce", "--overlap-param-gather", "--fp8-param-gather", "--grad-reduce-in-bf16",
    "--tp-comm-overlap", "--cross-entropy-loss-fusion", "--no-gradient-accumulation-fusion"};

// Flags that change nothing a step costs: data and tokenizer files,
// logging, checkpoints, evaluation, the learning-rate schedule and the
// optimizer's hyperparameters, seeds, initialization, run length, process
// setup. A prefix ends in '-'.
constexpr std::array kNoEffect = {
    "--adam-", "--apply-layernorm-1p", "--async-save", "--auto-detect-ckpt-format", "--bias-dropout-fusion",
    "--calculate-per-token-loss", "--check-for-nan-in-loss-and-grad", "--ckpt-", "--clip-grad",
    "--create-attention-mask-in-dataloader", "--data-", "--dataloader-type", "--decoupled-lr",
    "--decoupled-min-lr", "--distributed-backend", "--distributed-timeout-minutes", "--empty-unused-memory-level",
    "--eod-mask-loss", "--eval-", "--exit-", "--finetune", "--full-validation", "--hysteresis", "--init-method-",
    "--initial-loss-scale", "--load", "--local-rank", "--log-", "--logging-level", "--loss-scale",
    "--lr", "--lr-", "--make-vocab-size-divisible-by", "--manual-gc", "--merge-file", "--min-loss-scale",
    "--min-lr", "--mmap-bin-files", "--mock-data", "--no-async-save", "--no-create-attention-mask-in-dataloader",
    "--no-load-", "--no-mmap-bin-files", "--no-save-", "--non-persistent-", "--num-dataset-builder-threads",
    "--num-workers", "--override-opt_param-scheduler", "--per-split-data-args-path", "--profile",
    "--profile-", "--pretrained-checkpoint", "--record-memory-history", "--reset-attention-mask",
    "--reset-position-ids", "--rotary-base", "--rotary-percent", "--rotary-scaling-factor", "--sample-rate",
    "--save", "--save-", "--seed", "--sgd-momentum", "--split", "--start-weight-decay", "--end-weight-decay",
    "--step-batch-size-schedule", "--rampup-batch-size", "--tensorboard-", "--test-data-path", "--tiktoken-",
    "--timing-log-", "--tokenizer-model", "--train-data-path", "--train-iters", "--train-samples",
    "--use-checkpoint-args", "--use-dist-ckpt", "--use-mcore-models", "--valid-data-path", "--vocab-file",
    "--wandb-", "--weight-decay", "--weight-decay-incr-style", "--yaml-cfg", "--use-rotary-position-embeddings",
    "--no-rope-fusion", "--no-persist-layer-norm", "--log-throughput"};

bool no_effect(std::string_view name) {
  for (const std::string_view pattern : kNoEffect)
    if (pattern.ends_with('-') ? name.starts_with(pattern) : name == pattern) return true;
  return false;
}

std::string key_of(std::string_view flag) {
  std::string key(flag.substr(2));
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

}  // namespace

MegatronLaunch parse_megatron_args(const std::vector<std::string>& args) {
  const std::vector<Given> given = tokenize(args);
  std::map<std::string, const Given*> last;  // argparse: the last occurrence wins
  for (const auto& g : given) last[g.name] = &g;
  const auto has = [&](const char* name) { return last.count(name) > 0; };
  const auto get = [&](const char* name) -> const Given& { return *last.at(name); };
  for (const char* required : {"--num-layers", "--hidden-size", "--num-attention-heads", "--max-position-embeddings",
                               "--seq-length"})
    if (!has(required))
      throw ConfigError(fmt::format("{}: {} is missing; ptsim needs the model's size from the launch line "
                                    "(Megatron requires --num-layers, --hidden-size, --num-attention-heads and "
                                    "--max-position-embeddings; the step's length is --seq-length)",
                                    kWhere, required));
  MegatronLaunch out;
  json model = json::object();
  json strategy = json::object();
  std::vector<std::string> handled;
  const auto take = [&](const char* name) { handled.emplace_back(name); };

  // ---- the model: Megatron's flags, Megatron's defaults ----
  const std::int64_t h = integer_of(get("--hidden-size"));
  model["name"] = fmt::format("Megatron-LM model ({} layers, hidden {})", integer_of(get("--num-layers")), h);
  model["num_layers"] = integer_of(get("--num-layers"));
  model["hidden_size"] = h;
  model["num_attention_heads"] = integer_of(get("--num-attention-heads"));
  model["seq_length"] = integer_of(get("--seq-length"));
  for (const char* f : {"--num-layers", "--hidden-size", "--num-attention-heads", "--seq-length",
                        "--max-position-embeddings"})
    take(f);
  if (integer_of(get("--seq-length")) > integer_of(get("--max-position-embeddings")))
    throw ConfigError(fmt::format("{}: --seq-length {} exceeds --max-position-embeddings {}", kWhere,
                                  integer_of(get("--seq-length")), integer_of(get("--max-position-embeddings"))));
  const bool swiglu = has("--swiglu");
  take("--swiglu");
  if (has("--squared-relu"))
    throw ConfigError(fmt::format("{}: --squared-relu: ptsim simulates GeLU and SwiGLU MLPs only", kWhere));
  model["activation"] = swiglu ? "swiglu" : "gelu";
  // arguments.py validate_args: 4h, or with SwiGLU 8h/3 rounded down to a multiple of 64.
  model["ffn_hidden_size"] = has("--ffn-hidden-size") ? integer_of(get("--ffn-hidden-size"))
                             : swiglu                 ? (4 * h * 2 / 3) / 64 * 64
                                                      : 4 * h;
  take("--ffn-hidden-size");
  if (has("--kv-channels")) model["kv_channels"] = integer_of(get("--kv-channels"));
  take("--kv-channels");
  if (has("--group-query-attention")) {
    if (!has("--num-query-groups"))
      throw ConfigError(fmt::format("{}: --group-query-attention needs --num-query-groups", kWhere));
    model["num_query_groups"] = integer_of(get("--num-query-groups"));
  }
  take("--group-query-attention");
  take("--num-query-groups");
  if (has("--normalization"))
    model["normalization"] = choice_of(get("--normalization"), {"LayerNorm", "RMSNorm"}) == "LayerNorm" ? "layernorm"
                                                                                                      : "rmsnorm";
  take("--normalization");
  if (has("--position-embedding-type"))
    model["position_embedding_type"] = choice_of(get("--position-embedding-type"), {"learned_absolute", "rope", "none"});
  take("--position-embedding-type");
  model["tie_embeddings"] = !has("--untie-embeddings-and-output-weights");
  take("--untie-embeddings-and-output-weights");
  model["add_bias_linear"] = !has("--disable-bias-linear");
  take("--disable-bias-linear");
  model["add_qkv_bias"] = has("--add-qkv-bias");
  take("--add-qkv-bias");
  model["qk_layernorm"] = has("--qk-layernorm");
  take("--qk-layernorm");
  // One dropout probability for hidden and attention dropout (Megatron's defaults: 0.1 each).
  const double hidden_dropout = has("--hidden-dropout") ? number_of(get("--hidden-dropout")) : 0.1;
  const double attention_dropout = has("--attention-dropout") ? number_of(get("--attention-dropout")) : 0.1;
  model["dropout"] = std::max(hidden_dropout, attention_dropout);
  take("--hidden-dropout");
  take("--attention-dropout");
  // The vocabulary: given, or GPT-2's BPE (50,257 tokens); padded as
  // Megatron pads it, to a multiple of make-vocab-size-divisible-by × TP
  // (megatron/core/tokenizers/utils/build_tokenizer.py, vocab_size_with_padding).
  std::int64_t vocab = 0;
  if (has("--vocab-size")) {
    vocab = integer_of(get("--vocab-size"));
  } else if ((has("--tokenizer-type") && get("--tokenizer-type").values.at(0) == "GPT2BPETokenizer") ||
             (!has("--tokenizer-type") && has("--vocab-file") && has("--merge-file"))) {
    // GPT-2's public BPE vocabulary; a vocabulary and a merge file without
    // a tokenizer type are that BPE's (Megatron's GPT examples pass
    // gpt2-vocab.json and gpt2-merges.txt).
    vocab = 50257;
  } else {
    throw ConfigError(fmt::format(
        "{}: the vocabulary size is unknown: {} names no tokenizer ptsim can size; give --vocab-size N (the "
        "tokenizer's vocabulary, before Megatron pads it)",
        kWhere, has("--tokenizer-type") ? "--tokenizer-type " + get("--tokenizer-type").values.at(0) : "nothing"));
  }
  take("--vocab-size");
  take("--tokenizer-type");
  take("--make-vocab-size-divisible-by");
  const std::int64_t divisible_by = has("--make-vocab-size-divisible-by") ? integer_of(get("--make-vocab-size-divisible-by")) : 128;
  const std::int64_t tp = has("--tensor-model-parallel-size") ? integer_of(get("--tensor-model-parallel-size")) : 1;
  if (divisible_by < 1 || tp < 1)
    throw ConfigError(fmt::format("{}: --make-vocab-size-divisible-by and --tensor-model-parallel-size must be "
                                  "at least 1",
                                  kWhere));
  const std::int64_t multiple = divisible_by * tp;
  model["vocab_size"] = (vocab + multiple - 1) / multiple * multiple;
  // Mixture of experts.
  if (has("--num-experts")) {
    model["num_moe_experts"] = integer_of(get("--num-experts"));
    model["moe_router_topk"] = has("--moe-router-topk") ? integer_of(get("--moe-router-topk")) : 2;
    model["moe_ffn_hidden_size"] = has("--moe-ffn-hidden-size") ? integer_of(get("--moe-ffn-hidden-size"))
                                                                : model["ffn_hidden_size"].get<std::int64_t>();
    if (has("--moe-shared-expert-intermediate-size"))
      model["moe_shared_expert_intermediate_size"] = integer_of(get("--moe-shared-expert-intermediate-size"));
    if (has("--moe-layer-freq") && get("--moe-layer-freq").values.at(0) != "1")
      throw ConfigError(fmt::format("{}: --moe-layer-freq {}: ptsim simulates an MoE MLP in every layer", kWhere,
                                    get("--moe-layer-freq").values.at(0)));
  }
  for (const char* f : {"--num-experts", "--moe-router-topk", "--moe-ffn-hidden-size",
                        "--moe-shared-expert-intermediate-size", "--moe-layer-freq"})
    take(f);
  // Multi-head latent attention.
  if (has("--multi-latent-attention")) {
    model["multi_latent_attention"] = true;
    model.erase("kv_channels");
    for (const auto& [flag, key] : std::array<std::pair<const char*, const char*>, 5>{
             {{"--q-lora-rank", "q_lora_rank"}, {"--kv-lora-rank", "kv_lora_rank"}, {"--qk-head-dim", "qk_head_dim"},
              {"--qk-pos-emb-head-dim", "qk_pos_emb_head_dim"}, {"--v-head-dim", "v_head_dim"}}})
      if (has(flag)) model[key] = integer_of(get(flag));
  }
  for (const char* f : {"--multi-latent-attention", "--q-lora-rank", "--kv-lora-rank", "--qk-head-dim",
                        "--qk-pos-emb-head-dim", "--v-head-dim"})
    take(f);

  // ---- the strategy ----
  for (const char* flag : kSameStrategyKey) {
    if (!has(flag)) continue;
    const Given& g = get(flag);
    const std::string key = key_of(flag);
    if (g.values.empty()) {
      strategy[key] = true;
    } else if (key == "pipeline_model_parallel_layout") {
      strategy[key] = g.values.at(0);
    } else if (key == "moe_expert_capacity_factor") {
      strategy[key] = number_of(g);
    } else {
      strategy[key] = integer_of(g);
    }
    take(flag);
  }
  // arguments.py validate_args: "Disabling sequence parallelism because
  // tensor model parallelism is disabled".
  if (tp == 1 && strategy.contains("sequence_parallel")) {
    strategy.erase("sequence_parallel");
    out.notes.push_back("--sequence-parallel with --tensor-model-parallel-size 1: Megatron-LM disables sequence "
                        "parallelism (validate_args), and so does ptsim");
  }
  // Precision: fp16 runs on bf16's tensor cores at its rate; FP8 as
  // Transformer Engine runs it, with the recipes ptsim models.
  for (const char* f : {"--bf16", "--fp16"}) take(f);
  if (has("--fp8-format")) {
    choice_of(get("--fp8-format"), {"e4m3", "hybrid"});
    strategy["precision"] = "fp8";
    if (has("--fp8-recipe"))
      strategy["fp8_recipe"] = choice_of(get("--fp8-recipe"), {"delayed", "tensorwise"},
                                         "blockwise and mxfp8 are not modelled yet");
  }
  for (const char* f : {"--fp8-format", "--fp8-recipe", "--fp8-amax-history-len", "--fp8-amax-compute-algo",
                        "--fp8-margin", "--fp8-interval"})
    take(f);
  // Recomputation: selective (--recompute-activations is its old name), or
  // full by layer: uniform with one layer a chunk (every layer
  // checkpointed) or block (the first N layers of each stage).
  std::string granularity = has("--recompute-activations") ? "selective" : "none";
  if (has("--recompute-granularity")) granularity = choice_of(get("--recompute-granularity"), {"full", "selective"});
  if (granularity == "full") {
    if (!has("--recompute-method"))
      throw ConfigError(fmt::format("{}: --recompute-granularity full needs --recompute-method uniform or block",
                                    kWhere));
    const std::string method = choice_of(get("--recompute-method"), {"uniform", "block"});
    const std::int64_t layers = has("--recompute-num-layers") ? integer_of(get("--recompute-num-layers")) : 1;
    if (method == "uniform" && layers != 1)
      throw ConfigError(fmt::format("{}: --recompute-method uniform --recompute-num-layers {}: ptsim checkpoints "
                                    "every layer (uniform with 1) or the first N of each stage (block); chunks of "
                                    "several layers are not modelled",
                                    kWhere, layers));
    strategy["recompute"] = "full";
    if (method == "block") strategy["recompute_num_layers"] = layers;
  } else if (granularity == "selective") {
    strategy["recompute"] = "selective";
  }
  for (const char* f : {"--recompute-activations", "--recompute-granularity", "--recompute-method",
                        "--recompute-num-layers"})
    take(f);
  // Attention kernels: Transformer Engine's backends.
  if (has("--attention-backend")) {
    const std::string b = choice_of(get("--attention-backend"), {"flash", "fused", "unfused", "local", "auto"});
    if (b == "fused") strategy["attention_backend"] = "cudnn";  // cuDNN's fused attention
    if (b == "unfused" || b == "local") strategy["attention_backend"] = "unfused";
    if (b == "flash") strategy["attention_backend"] = "flash";
    // auto: Transformer Engine picks; ptsim's default, fused flash-style kernels.
  }
  if (has("--use-flash-attn")) strategy["attention_backend"] = "flash";
  take("--attention-backend");
  take("--use-flash-attn");
  if (has("--transformer-impl")) choice_of(get("--transformer-impl"), {"transformer_engine"}, "Megatron's local layers are not modelled");
  take("--transformer-impl");
  // Megatron-Core: --overlap-p2p-communication is on unless turned off
  // (it applies to the interleaved schedule only), and the batched p2p
  // calls synchronize the device (batch_p2p_sync, True by default).
  strategy["overlap_p2p_comm"] = !has("--no-overlap-p2p-communication");
  strategy["batch_p2p_sync"] = true;
  take("--overlap-p2p-communication");
  take("--no-overlap-p2p-communication");

  // ---- what is left: no effect on a step, or not modelled ----
  for (const auto& g : given) {
    if (std::find(handled.begin(), handled.end(), g.name) != handled.end()) continue;
    auto& list = no_effect(g.name) ? out.ignored : out.not_modelled;
    if (std::find(list.begin(), list.end(), g.name) == list.end()) list.push_back(g.name);
  }
  out.model = parse_model(model, kWhere, "megatron");
  out.strategy = parse_strategy(strategy, kWhere);
  return out;
}

}  // namespace ptsim::config

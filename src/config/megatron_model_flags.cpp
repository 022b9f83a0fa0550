// A launch line's architecture flags → ptsim's model JSON, with
// Megatron-LM's defaults where a flag is absent (see megatron_args.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

#include "internal/megatron_launch_flags.hpp"
#include "internal/moe_layer_pattern.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::config::internal {

using nlohmann::json;

json megatron_model_json(LaunchFlags& flags) {
  json model = json::object();
  // ---- the model: Megatron's flags, Megatron's defaults ----
  const std::int64_t h = integer_of(flags.get("--hidden-size"));
  model["name"] = fmt::format("Megatron-LM model ({} layers, hidden {})", integer_of(flags.get("--num-layers")), h);
  model["num_layers"] = integer_of(flags.get("--num-layers"));
  model["hidden_size"] = h;
  model["num_attention_heads"] = integer_of(flags.get("--num-attention-heads"));
  model["seq_length"] = integer_of(flags.get("--seq-length"));
  for (const char* f :
       {"--num-layers", "--hidden-size", "--num-attention-heads", "--seq-length", "--max-position-embeddings"})
    flags.take(f);
  if (integer_of(flags.get("--seq-length")) > integer_of(flags.get("--max-position-embeddings")))
    throw ConfigError(fmt::format("{}: --seq-length {} exceeds --max-position-embeddings {}", kMegatronWhere,
                                  integer_of(flags.get("--seq-length")),
                                  integer_of(flags.get("--max-position-embeddings"))));
  const bool swiglu = flags.has("--swiglu");
  const bool squared_relu = flags.has("--squared-relu");
  flags.take("--swiglu");
  flags.take("--squared-relu");
  if (swiglu && squared_relu)
    throw ConfigError(fmt::format("{}: --swiglu and --squared-relu name two activations; give one", kMegatronWhere));
  model["activation"] = swiglu ? "swiglu" : squared_relu ? "squared-relu" : "gelu";
  // arguments.py validate_args: 4h, or with SwiGLU 8h/3 rounded down to a multiple of 64.
  model["ffn_hidden_size"] = flags.has("--ffn-hidden-size") ? integer_of(flags.get("--ffn-hidden-size"))
                             : swiglu                       ? (4 * h * 2 / 3) / 64 * 64
                                                            : 4 * h;
  flags.take("--ffn-hidden-size");
  if (flags.has("--kv-channels")) model["kv_channels"] = integer_of(flags.get("--kv-channels"));
  flags.take("--kv-channels");
  if (flags.has("--group-query-attention")) {
    if (!flags.has("--num-query-groups"))
      throw ConfigError(fmt::format("{}: --group-query-attention needs --num-query-groups", kMegatronWhere));
    model["num_query_groups"] = integer_of(flags.get("--num-query-groups"));
  }
  flags.take("--group-query-attention");
  flags.take("--num-query-groups");
  if (flags.has("--normalization"))
    model["normalization"] =
        choice_of(flags.get("--normalization"), {"LayerNorm", "RMSNorm"}) == "LayerNorm" ? "layernorm" : "rmsnorm";
  flags.take("--normalization");
  if (flags.has("--position-embedding-type"))
    model["position_embedding_type"] =
        choice_of(flags.get("--position-embedding-type"), {"learned_absolute", "rope", "none"});
  flags.take("--position-embedding-type");
  model["tie_embeddings"] = !flags.has("--untie-embeddings-and-output-weights");
  flags.take("--untie-embeddings-and-output-weights");
  model["add_bias_linear"] = !flags.has("--disable-bias-linear");
  flags.take("--disable-bias-linear");
  model["add_qkv_bias"] = flags.has("--add-qkv-bias");
  flags.take("--add-qkv-bias");
  // Under multi-latent attention --qk-layernorm norms the query and key/value
  // latents (gpt_layer_specs.py at d98e8a64dd: the up-projections become
  // LayerNormLinear), which ptsim's MLA always runs; otherwise it norms each
  // head's query and key.
  model["qk_layernorm"] = flags.has("--qk-layernorm") && !flags.has("--multi-latent-attention");
  flags.take("--qk-layernorm");
  // One dropout probability for hidden and attention dropout (Megatron's defaults: 0.1 each).
  const double hidden_dropout = flags.has("--hidden-dropout") ? number_of(flags.get("--hidden-dropout")) : 0.1;
  const double attention_dropout = flags.has("--attention-dropout") ? number_of(flags.get("--attention-dropout")) : 0.1;
  model["dropout"] = std::max(hidden_dropout, attention_dropout);
  flags.take("--hidden-dropout");
  flags.take("--attention-dropout");
  // The vocabulary: given, or GPT-2's BPE (50,257 tokens); padded as
  // Megatron pads it, to a multiple of make-vocab-size-divisible-by × TP
  // (megatron/core/tokenizers/utils/build_tokenizer.py, vocab_size_with_padding).
  std::int64_t vocab = 0;
  if (flags.has("--vocab-size")) {
    vocab = integer_of(flags.get("--vocab-size"));
  } else if ((flags.has("--tokenizer-type") && flags.get("--tokenizer-type").values.at(0) == "GPT2BPETokenizer") ||
             (!flags.has("--tokenizer-type") && flags.has("--vocab-file") && flags.has("--merge-file"))) {
    // GPT-2's public BPE vocabulary; a vocabulary and a merge file without
    // a tokenizer type are that BPE's (Megatron's GPT examples pass
    // gpt2-vocab.json and gpt2-merges.txt).
    vocab = 50257;
  } else {
    throw ConfigError(
        fmt::
            format("{}: the vocabulary size is unknown: {} names no tokenizer ptsim can size; give --vocab-size N (the "
                   "tokenizer's vocabulary, before Megatron pads it)",
                   kMegatronWhere,
                   flags.has("--tokenizer-type") ? "--tokenizer-type " + flags.get("--tokenizer-type").values.at(0)
                                                 : "nothing"));
  }
  flags.take("--vocab-size");
  flags.take("--tokenizer-type");
  flags.take("--make-vocab-size-divisible-by");
  const std::int64_t divisible_by =
      flags.has("--make-vocab-size-divisible-by") ? integer_of(flags.get("--make-vocab-size-divisible-by")) : 128;
  const std::int64_t tp =
      flags.has("--tensor-model-parallel-size") ? integer_of(flags.get("--tensor-model-parallel-size")) : 1;
  if (divisible_by < 1 || tp < 1)
    throw ConfigError(
        fmt::format("{}: --make-vocab-size-divisible-by and --tensor-model-parallel-size must be "
                    "at least 1",
                    kMegatronWhere));
  const std::int64_t multiple = divisible_by * tp;
  model["vocab_size"] = (vocab + multiple - 1) / multiple * multiple;
  // Mixture of experts.
  if (flags.has("--num-experts")) {
    model["num_moe_experts"] = integer_of(flags.get("--num-experts"));
    model["moe_router_topk"] = flags.has("--moe-router-topk") ? integer_of(flags.get("--moe-router-topk")) : 2;
    model["moe_ffn_hidden_size"] = flags.has("--moe-ffn-hidden-size") ? integer_of(flags.get("--moe-ffn-hidden-size"))
                                                                      : model["ffn_hidden_size"].get<std::int64_t>();
    if (flags.has("--moe-shared-expert-intermediate-size"))
      model["moe_shared_expert_intermediate_size"] = integer_of(flags.get("--moe-shared-expert-intermediate-size"));
    if (flags.has("--moe-latent-size")) model["moe_latent_size"] = integer_of(flags.get("--moe-latent-size"));
    if (flags.has("--moe-layer-freq")) {
      // Dense layers before the MoE ones (DeepSeek-V3's "([0]*3+[1]*58)").
      const std::string& text = flags.get("--moe-layer-freq").values.at(0);
      const std::int64_t dense =
          leading_dense_layers(moe_layer_pattern(text, model["num_layers"].get<std::int64_t>()), text);
      if (dense > 0) model["first_dense_layers"] = dense;
    }
  }
  for (const char* f : {"--num-experts", "--moe-router-topk", "--moe-ffn-hidden-size",
                        "--moe-shared-expert-intermediate-size", "--moe-layer-freq", "--moe-latent-size"})
    flags.take(f);
  // Hybrid models (pretrain_hybrid.py): the layer pattern, under its
  // current name or the deprecated one, and the Mamba-2 mixer's sizes.
  for (const char* f : {"--hybrid-layer-pattern", "--hybrid-override-pattern"})
    if (flags.has(f)) model["hybrid_layer_pattern"] = flags.get(f).values.at(0);
  for (const auto& [flag, key] :
       std::array<std::pair<const char*, const char*>, 4>{{{"--mamba-num-heads", "mamba_num_heads"},
                                                           {"--mamba-head-dim", "mamba_head_dim"},
                                                           {"--mamba-state-dim", "mamba_state_dim"},
                                                           {"--mamba-num-groups", "mamba_num_groups"}}})
    if (flags.has(flag)) model[key] = integer_of(flags.get(flag));
  for (const char* f : {"--hybrid-layer-pattern", "--hybrid-override-pattern", "--is-hybrid-model", "--mamba-num-heads",
                        "--mamba-head-dim", "--mamba-state-dim", "--mamba-num-groups"})
    flags.take(f);
  // Multi-token prediction depths on the last stage. A hybrid model's
  // depths are its unified pattern's segments after '/'; the legacy
  // --mtp-hybrid-override-pattern is one depth's, repeated --mtp-num-layers
  // times as Megatron's arguments.py converts it.
  if (flags.has("--mtp-num-layers")) model["mtp_num_layers"] = integer_of(flags.get("--mtp-num-layers"));
  if (flags.has("--mtp-hybrid-override-pattern") && model.contains("hybrid_layer_pattern") &&
      model["hybrid_layer_pattern"].get<std::string>().find('/') == std::string::npos &&
      flags.has("--mtp-num-layers")) {
    std::string pattern = model["hybrid_layer_pattern"].get<std::string>();
    for (std::int64_t d = 0; d < model["mtp_num_layers"].get<std::int64_t>(); ++d)
      pattern += "/" + flags.get("--mtp-hybrid-override-pattern").values.at(0);
    model["hybrid_layer_pattern"] = pattern;
  }
  if (flags.has("--mtp-use-repeated-layer")) model["mtp_use_repeated_layer"] = true;
  for (const char* f : {"--mtp-num-layers", "--mtp-hybrid-override-pattern", "--mtp-use-repeated-layer"}) flags.take(f);
  // Multi-head latent attention.
  if (flags.has("--multi-latent-attention")) {
    model["multi_latent_attention"] = true;
    model.erase("kv_channels");
    for (const auto& [flag, key] :
         std::array<std::pair<const char*, const char*>, 5>{{{"--q-lora-rank", "q_lora_rank"},
                                                             {"--kv-lora-rank", "kv_lora_rank"},
                                                             {"--qk-head-dim", "qk_head_dim"},
                                                             {"--qk-pos-emb-head-dim", "qk_pos_emb_head_dim"},
                                                             {"--v-head-dim", "v_head_dim"}}})
      if (flags.has(flag)) model[key] = integer_of(flags.get(flag));
  }
  for (const char* f : {"--multi-latent-attention", "--q-lora-rank", "--kv-lora-rank", "--qk-head-dim",
                        "--qk-pos-emb-head-dim", "--v-head-dim"})
    flags.take(f);

  return model;
}

}  // namespace ptsim::config::internal

// ModelSpec: what is trained — the dimensions of a GPT/Llama/BERT-style
// transformer, with Megatron-LM's names. Input stage of the flow; no JSON here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptsim::model {

/// The MLP's activation: GeLU or squared ReLU (relu(x)², Nemotron; Megatron's
/// --squared-relu) on one projection, or a gated linear unit whose first
/// projection makes a gate and an up half (SwiGLU: SiLU gate, Llama; GeGLU:
/// tanh-approximated GeLU gate, Gemma).
enum class Activation { Gelu, SwiGlu, GeGlu, SquaredRelu };
enum class Normalization { LayerNorm, RmsNorm };
enum class PositionEmbedding { LearnedAbsolute, Rope, None };

struct ModelSpec {
  std::string name;                 // human-readable, e.g. "GPT-3 175B"
  std::int64_t num_layers = 0;
  std::int64_t hidden_size = 0;     // h
  std::int64_t num_attention_heads = 0;  // a
  std::int64_t num_query_groups = 0;     // key/value heads (GQA); = a without GQA
  std::int64_t kv_channels = 0;     // per-head dimension; h / a unless set
  std::int64_t ffn_hidden_size = 0; // 4h for GPT
  std::int64_t vocab_size = 0;      // V, padded as the framework pads it
  std::int64_t seq_length = 0;      // s
  Activation activation = Activation::Gelu;
  Normalization normalization = Normalization::LayerNorm;
  PositionEmbedding position_embedding = PositionEmbedding::LearnedAbsolute;
  bool tie_embeddings = true;       // LM head shares the input embedding matrix
  bool add_bias_linear = true;      // linear layers carry biases (GPT yes, Llama no)
  /// Biases on the query, key and value projections only (Qwen2; Megatron's
  /// --add-qkv-bias); add_bias_linear puts them there too.
  bool add_qkv_bias = false;
  bool qkv_bias() const { return add_bias_linear || add_qkv_bias; }
  /// Where seq_length came from when a Hugging Face config gave it (e.g.
  /// "max_position_embeddings"); empty for ptsim's own files.
  std::string seq_length_from;
  /// Gemma 2: a norm on each sublayer's output before its residual add
  /// (post_attention_layernorm, post_feedforward_layernorm), four per layer.
  bool post_sublayer_norms = false;
  double dropout = 0.1;             // hidden and attention dropout probability
  bool causal = true;               // decoder (causal) attention; false for encoders (BERT)

  // ---- Attention variants ----
  /// Qwen3, OLMo 2: RMSNorm over each query and key head before attention.
  bool qk_layernorm = false;
  /// Sliding-window attention: a query attends to the last `sliding_window`
  /// keys (itself included) in the layers flagged in `sliding_window_layers`
  /// (one entry per layer; empty: no sliding-window layer). gpt-oss alternates.
  std::int64_t sliding_window = 0;
  std::vector<std::uint8_t> sliding_window_layers;
  /// Soft-capping, cap·tanh(x/cap) (Gemma 2; 0: none): of the attention
  /// scores before the softmax, and of the LM head's logits before the loss.
  double attn_logit_softcapping = 0;
  double final_logit_softcapping = 0;

  // ---- Multi-head latent attention (DeepSeek-V2/V3; Megatron-Core's MLA names) ----
  bool multi_latent_attention = false;
  std::int64_t q_lora_rank = 0;          // query down-projection rank; 0: queries projected directly
  std::int64_t kv_lora_rank = 0;         // compressed key/value width
  std::int64_t qk_head_dim = 0;          // per-head query/key width without RoPE (HF qk_nope_head_dim)
  std::int64_t qk_pos_emb_head_dim = 0;  // per-head RoPE width, key part shared by the heads (HF qk_rope_head_dim)
  std::int64_t v_head_dim = 0;           // per-head value width

  // ---- DeepSeek-V4's hybrid attention (Megatron-Core's dsv4_hybrid variant) ----
  /// One compression ratio per layer, then one per MTP depth (Megatron-Core's
  /// csa_compress_ratios, Hugging Face's compress_ratios): 0 sliding-window
  /// attention only; 4 compressed sparse attention (CSA: keys pooled four to
  /// one with overlapping windows, a learned indexer picks dsa_indexer_topk
  /// of them for each query); 128 heavily compressed attention (HCA: every
  /// causally valid pooled key). Every query also attends to the last
  /// csa_window_size tokens. One key/value head of kv_channels, its key and
  /// value the same tensor (megatron/core/transformer/
  /// experimental_attention_variant/csa.py). Empty: no such attention.
  std::vector<std::int64_t> csa_compress_ratios;
  std::int64_t csa_window_size = 0;
  std::int64_t dsa_indexer_n_heads = 0;   // the indexer's heads (HF index_n_heads)
  std::int64_t dsa_indexer_head_dim = 0;  // and their width (index_head_dim)
  std::int64_t dsa_indexer_topk = 0;      // pooled keys each query keeps (index_topk)
  /// The grouped low-rank output projection: the heads' outputs in o_groups
  /// groups, each projected to o_lora_rank (wo_a, one weight a group), the
  /// groups' concatenation to h (wo_b). 0: a plain output projection.
  std::int64_t o_groups = 0;
  std::int64_t o_lora_rank = 0;
  /// Manifold-constrained hyper-connections (mHC; Megatron-Core's
  /// HyperConnectionModule, megatron/core/transformer/hyper_connection.py):
  /// the residual stream is this many copies of h, mixed around each
  /// sublayer by per-token matrices from a projection of the whole stream
  /// (n² + 2n outputs) and mhc_sinkhorn_iterations of Sinkhorn-Knopp. 1: none.
  std::int64_t mhc_num_residual_streams = 1;
  std::int64_t mhc_sinkhorn_iterations = 0;
  /// The first layers route by a fixed token → expert table (DeepSeek-V4's
  /// hash MoE, Megatron-Core's moe_n_hash_layers): the router's GEMM and
  /// scores still run (the table picks, the scores weigh), only its top-k
  /// selection does not; priced as routed layers are.
  std::int64_t moe_n_hash_layers = 0;
  bool has_compressed_attention() const { return !csa_compress_ratios.empty(); }
  /// Layer `l`'s compression ratio (an MTP depth d: l = num_layers + d).
  std::int64_t compress_ratio(std::int64_t l) const { return csa_compress_ratios[static_cast<std::size_t>(l)]; }
  bool hyper_connections() const { return mhc_num_residual_streams > 1; }
  /// The width of what one layer hands the next: h, or n copies of it under mHC.
  std::int64_t residual_width() const { return mhc_num_residual_streams * hidden_size; }

  // ---- Mixture of experts (num_moe_experts = 0: every MLP is dense) ----
  std::int64_t num_moe_experts = 0;      // routed experts per MoE layer
  std::int64_t moe_router_topk = 0;      // routed experts per token
  std::int64_t moe_ffn_hidden_size = 0;  // width of one routed expert
  /// Total width of the shared experts every token also runs (0: none);
  /// DeepSeek-V3: 1 × 2048, Megatron's --moe-shared-expert-intermediate-size.
  std::int64_t moe_shared_expert_intermediate_size = 0;
  /// The first layers keep a dense MLP of ffn_hidden_size (DeepSeek's
  /// first_k_dense_replace); the others are MoE layers.
  std::int64_t first_dense_layers = 0;
  /// Latent MoE (Nemotron 3 Super; Megatron's --moe-latent-size): the MoE
  /// layer projects its tokens h → moe_latent_size (fc1_latent_proj, a whole
  /// weight on every TP rank) after the router, which still reads h; the
  /// routed experts read and write that width and the tokens travel at it;
  /// fc2_latent_proj projects the combined output back to h before the
  /// shared experts' output is added (megatron/core/transformer/moe/
  /// moe_layer.py at d98e8a64dd). 0: no latent projection.
  std::int64_t moe_latent_size = 0;
  /// Multi-token prediction depths (DeepSeek-V3's MTP modules; Megatron's
  /// --mtp-num-layers, Hugging Face's num_nextn_predict_layers). Each depth
  /// on the last pipeline stage normalizes the embedding of the tokens one
  /// further ahead and the previous depth's hidden state, projects their
  /// concatenation (2h → h), runs one transformer layer built as the last
  /// one, and its own final norm, the shared LM head and a cross-entropy
  /// loss (megatron/core/transformer/multi_token_prediction.py).
  std::int64_t mtp_num_layers = 0;
  /// Every depth runs one shared set of weights (Megatron's
  /// mtp_use_repeated_layer; Nemotron 3 Super trains one MTP block twice).
  bool mtp_use_repeated_layer = false;
  /// A hybrid model's MTP depth: its layers, one symbol each as in
  /// hybrid_layer_pattern (Megatron's unified pattern after '/', or
  /// mtp_hybrid_override_pattern; Nemotron 3 Super: "*E"). Empty otherwise.
  std::string mtp_layer_pattern;

  // ---- Hybrid models (Megatron-Core's hybrid stack: Nemotron-H, Nemotron 3) ----
  /// One symbol per layer, Megatron's hybrid_layer_pattern: 'M' a Mamba-2
  /// mixer, '*' self-attention, '-' a dense MLP, 'E' an MoE MLP, each a layer
  /// of its own with one pre-norm and a residual (megatron/core/ssm/
  /// mamba_block.py). Empty: every layer is a transformer layer (attention
  /// and an MLP).
  std::string hybrid_layer_pattern;
  /// Mamba-2 mixer (megatron/core/ssm/mamba_mixer.py; TransformerConfig's
  /// defaults): H heads of P channels (d_inner = H·P), a state of N per
  /// channel, B and C shared by the heads of each of G groups.
  std::int64_t mamba_num_heads = 0;
  std::int64_t mamba_head_dim = 64;
  std::int64_t mamba_state_dim = 128;
  std::int64_t mamba_num_groups = 8;
  /// The SSD kernels' chunk length: 128 in Megatron-Core (MambaMixer's
  /// chunk_size, not a TransformerConfig field, so no launch flag sets it);
  /// mamba_ssm's own Mamba2 module and Hugging Face's default to 256.
  std::int64_t mamba_chunk_size = 128;
  /// MambaMixer's fixed depthwise convolution width (d_conv), not a
  /// TransformerConfig field.
  static constexpr std::int64_t kMambaConvWidth = 4;
  bool is_hybrid() const { return !hybrid_layer_pattern.empty(); }
  char layer_symbol(std::int64_t l) const { return hybrid_layer_pattern[static_cast<std::size_t>(l)]; }
  bool is_mamba_layer(std::int64_t l) const { return is_hybrid() && layer_symbol(l) == 'M'; }
  bool has_mamba_layers() const { return hybrid_layer_pattern.find('M') != std::string::npos; }
  /// Whether layer `l` has self-attention, and an MLP (dense or MoE).
  bool has_attention(std::int64_t l) const { return !is_hybrid() || layer_symbol(l) == '*'; }
  bool has_mlp(std::int64_t l) const { return !is_hybrid() || layer_symbol(l) == '-' || layer_symbol(l) == 'E'; }
  /// The mixer's inner width H·P, its input projection's outputs (z, x, B,
  /// C and dt: 2·d_inner + 2·G·N + H) and its convolution's channels (x, B, C).
  std::int64_t mamba_inner() const { return mamba_num_heads * mamba_head_dim; }
  std::int64_t mamba_in_proj_width() const {
    return 2 * mamba_inner() + 2 * mamba_num_groups * mamba_state_dim + mamba_num_heads;
  }
  std::int64_t mamba_conv_channels() const { return mamba_inner() + 2 * mamba_num_groups * mamba_state_dim; }

  /// The global indices of the layers an MTP depth's layers are built as:
  /// the last layer; in a hybrid model, for each symbol of its pattern the
  /// first main layer of that symbol (a hybrid model's layers of one symbol
  /// are alike).
  std::vector<std::int64_t> mtp_layer_kinds() const;
  /// The MTP weight sets the model holds: one a depth, or one if repeated.
  std::int64_t mtp_weight_sets() const { return mtp_use_repeated_layer && mtp_num_layers > 0 ? 1 : mtp_num_layers; }
  /// The width routed tokens travel at and the experts read and write.
  std::int64_t moe_token_width() const { return moe_latent_size > 0 ? moe_latent_size : hidden_size; }
  bool is_moe() const { return num_moe_experts > 0; }
  /// A gated MLP: fc1 makes 2·width outputs, gate and up halves.
  bool gated_mlp() const { return activation == Activation::SwiGlu || activation == Activation::GeGlu; }
  /// Norms in each layer: before attention and before the MLP, and with
  /// post_sublayer_norms after each too.
  /// A hybrid model's layers have one norm each.
  std::int64_t norms_per_layer() const { return is_hybrid() ? 1 : post_sublayer_norms ? 4 : 2; }
  /// Whether layer `l` (0-based, global) has an MoE MLP.
  bool is_moe_layer(std::int64_t l) const {
    if (is_hybrid()) return layer_symbol(l) == 'E';
    return is_moe() && l >= first_dense_layers;
  }
  /// Whether layer `l` uses sliding-window attention.
  bool is_sliding_window_layer(std::int64_t l) const {
    return sliding_window > 0 && static_cast<std::size_t>(l) < sliding_window_layers.size() &&
           sliding_window_layers[static_cast<std::size_t>(l)] != 0;
  }
};

std::string to_string(Activation a);
std::string to_string(Normalization n);
std::string to_string(PositionEmbedding p);

/// Parameters of one transformer layer (attention + MLP + norms, biases when
/// enabled) of a dense model. For MoE models use layer_parameters(m, l).
std::int64_t parameters_per_layer(const ModelSpec& m);
/// Parameters of the input embedding (word + learned positions).
std::int64_t embedding_parameters(const ModelSpec& m);
/// Parameters of the output layer (final norm + LM head unless tied).
std::int64_t output_parameters(const ModelSpec& m);
/// Parameters of one MTP depth: its layers (mtp_layer_kinds), the 2h → h
/// projection and three norms (the embedding and the LM head are shared).
std::int64_t mtp_depth_parameters(const ModelSpec& m);
/// All parameters of the model: every layer's, the embedding, the output
/// layer and the MTP depths' weight sets (mtp_weight_sets).
std::int64_t total_parameters(const ModelSpec& m);

/// Parameters of one Mamba-2 mixer (MambaMixer), its pre-norm aside: the
/// input projection to z, x, B, C and dt, the depthwise convolution over x, B
/// and C (kMambaConvWidth taps and a bias a channel), dt_bias, A_log and D a
/// head, the gated norm's weight over d_inner, and the output projection.
/// MambaMixer splits every one of them over TP by heads and groups.
std::int64_t mamba_parameters(const ModelSpec& m);
/// Parameters of layer `l`'s DeepSeek-V4 attention (an MTP depth's: l =
/// num_layers + d): projections, norms and sinks, and by its ratio the
/// compressor and the indexer. No TP split: Megatron-Core runs it at TP 1.
std::int64_t compressed_attention_parameters(const ModelSpec& m, std::int64_t layer);
/// Parameters of a layer's two hyper-connection modules (before attention
/// and before the MLP): the mapping projection n·h → n² + 2n, its bias and
/// three gating scalars each; 0 without mHC.
std::int64_t hyper_connection_parameters(const ModelSpec& m);
/// Parameters of a latent MoE layer's two projections, h → moe_latent_size
/// and back, with their biases under add_bias_linear; 0 without a latent.
/// Both are whole on every TP rank.
std::int64_t moe_latent_parameters(const ModelSpec& m);
/// Parameters of layer `l` (0-based, global): attention (with MLA's
/// projections and latent norms, or qk_layernorm's per-head norms), the
/// norms (norms_per_layer), and a dense MLP or, in an MoE layer, the router, every routed
/// expert and the shared experts; biases when add_bias_linear, as Megatron-LM
/// builds them.
std::int64_t layer_parameters(const ModelSpec& m, std::int64_t layer);
/// Parameters of layer `l` one token runs through: as layer_parameters, but
/// with only moe_router_topk of the routed experts.
std::int64_t active_layer_parameters(const ModelSpec& m, std::int64_t layer);
/// Parameters one token runs through: every layer's active parameters, the
/// embedding and the output layer (= total_parameters for a dense model).
std::int64_t active_parameters(const ModelSpec& m);

}  // namespace ptsim::model

// Parameter counts of mixture-of-experts and multi-head-latent-attention
// models: hand-counted tiny layers, and the shipped models against the totals
// and active counts their authors publish.
#include "ptsim/model/model_spec.hpp"

#include "test_support.hpp"

using namespace ptsim;

namespace {
// h = 16, 2 heads, SwiGLU MLP of width 10, RMSNorm, no biases, untied head.
model::ModelSpec tiny_decoder() {
  model::ModelSpec m;
  m.num_layers = 2;
  m.hidden_size = 16;
  m.num_attention_heads = 2;
  m.num_query_groups = 2;
  m.kv_channels = 8;
  m.ffn_hidden_size = 10;
  m.vocab_size = 100;
  m.seq_length = 32;
  m.activation = model::Activation::SwiGlu;
  m.normalization = model::Normalization::RmsNorm;
  m.position_embedding = model::PositionEmbedding::Rope;
  m.tie_embeddings = false;
  m.add_bias_linear = false;
  return m;
}

// DeepSeek-style latent attention: q_lora_rank 8, kv_lora_rank 4,
// qk_head_dim 3, qk_pos_emb_head_dim 2, v_head_dim 5.
model::ModelSpec tiny_mla() {
  model::ModelSpec m = tiny_decoder();
  m.multi_latent_attention = true;
  m.q_lora_rank = 8;
  m.kv_lora_rank = 4;
  m.qk_head_dim = 3;
  m.qk_pos_emb_head_dim = 2;
  m.v_head_dim = 5;
  m.kv_channels = 5;
  return m;
}
}  // namespace

TEST_CASE("A latent-attention layer has the parameters counted by hand", "[model]") {
  // q_a_proj 16·8 = 128, q_a_layernorm 8, q_b_proj 8·2·(3+2) = 80,
  // kv_a_proj_with_mqa 16·(4+2) = 96, kv_a_layernorm 4, kv_b_proj 4·2·(3+5) = 64,
  // o_proj 2·5·16 = 160: attention 540. Two RMSNorms 2·16 = 32.
  // SwiGLU MLP 16·2·10 + 10·16 = 480. Layer: 540 + 32 + 480 = 1052.
  auto m = tiny_mla();
  CHECK(model::layer_parameters(m, 0) == 1052);
  CHECK(model::active_layer_parameters(m, 0) == 1052);
  // Without query compression (q_lora_rank 0): q_proj 16·2·5 = 160 replaces
  // 128 + 8 + 80 = 216, so 1052 − 56 = 996.
  m.q_lora_rank = 0;
  CHECK(model::layer_parameters(m, 0) == 996);
}

TEST_CASE("An MoE layer counts every expert, an active one only the routed top-k", "[model]") {
  // Layer 0 dense (first_dense_layers 1), layer 1 MoE: 4 experts of width 6,
  // top-2, one shared expert of width 6.
  auto m = tiny_mla();
  m.num_moe_experts = 4;
  m.moe_router_topk = 2;
  m.moe_ffn_hidden_size = 6;
  m.moe_shared_expert_intermediate_size = 6;
  m.first_dense_layers = 1;
  // Router 16·4 = 64; one expert 16·2·6 + 6·16 = 288; shared 288.
  // Total: 540 + 32 + 64 + 4·288 + 288 = 2076. Active: 540 + 32 + 64 + 2·288 + 288 = 1500.
  CHECK(model::layer_parameters(m, 0) == 1052);
  CHECK(model::layer_parameters(m, 1) == 2076);
  CHECK(model::active_layer_parameters(m, 1) == 1500);
  // Embedding 100·16 and untied head 100·16, final norm 16: 3216.
  CHECK(model::total_parameters(m) == 1052 + 2076 + 3216);
  CHECK(model::active_parameters(m) == 1052 + 1500 + 3216);
}

TEST_CASE("Biases and query/key norms are counted as Megatron-LM builds them", "[model]") {
  model::ModelSpec m = tiny_decoder();
  // Attention 16·(16 + 2·16) + 16·16 = 1024; norms 32; MLP 480: 1536.
  CHECK(model::layer_parameters(m, 0) == 1536);
  // qk_layernorm: one RMSNorm over a head's 8 values for queries, one for keys.
  m.qk_layernorm = true;
  CHECK(model::layer_parameters(m, 0) == 1536 + 16);
  // gpt-oss style MoE with biases: 2 experts of width 3, top-1.
  m.qk_layernorm = false;
  m.add_bias_linear = true;
  m.num_moe_experts = 2;
  m.moe_router_topk = 1;
  m.moe_ffn_hidden_size = 3;
  // Attention 1024 + biases 48 + 16 = 1088; norms 32; router 16·2 + 2 = 34;
  // one expert 16·6 + 6 + 3·16 + 16 = 166.
  CHECK(model::layer_parameters(m, 0) == 1088 + 32 + 34 + 2 * 166);
  CHECK(model::active_layer_parameters(m, 0) == 1088 + 32 + 34 + 166);
}

TEST_CASE("A dense model's active parameters are all its parameters", "[model]") {
  const auto m = test::shipped_model("llama3-8b");
  CHECK(model::active_parameters(m) == model::total_parameters(m));
  CHECK(model::total_parameters(m) ==
        m.num_layers * model::parameters_per_layer(m) + model::embedding_parameters(m) +
            model::output_parameters(m));
}

TEST_CASE("MoE parameter counts match published model sizes", "[model]") {
  // Mixtral 8x7B (Mistral AI, "Mixtral of experts", 2023): 46.7B total,
  // 12.9B used per token.
  const auto mixtral = test::shipped_model("mixtral-8x7b");
  CHECK(model::total_parameters(mixtral) == Approx(46.7e9).epsilon(0.01));
  CHECK(model::active_parameters(mixtral) == Approx(12.9e9).epsilon(0.01));

  // DeepSeek-V3 (README_WEIGHTS.md of deepseek-ai/DeepSeek-V3): main model
  // 671B total, and one MTP module of 11.5B unique parameters (its embedding
  // and output head are the main model's); 36.6B activated "including 0.9B
  // for the output Head", which leaves out the 0.9B input embedding that
  // ptsim's active count holds: 36.6 + 0.9 = 37.5B (the paper rounds to 37B;
  // the MTP module is not part of a token's main forward).
  const auto deepseek = test::shipped_model("deepseek-v3");
  CHECK(deepseek.mtp_num_layers == 1);
  CHECK(model::mtp_depth_parameters(deepseek) == Approx(11.5e9).epsilon(0.01));
  CHECK(model::total_parameters(deepseek) == Approx(671e9 + 11.5e9).epsilon(0.01));
  CHECK(model::active_parameters(deepseek) == Approx(36.6e9 + 0.9e9).epsilon(0.01));

  // Qwen3-30B-A3B (Hugging Face model card): 30.5B total, 3.3B activated.
  // ptsim counts 3.353B (the total less the 120 of 128 experts per layer a
  // token skips); the card's 3.3B is that figure cut to one decimal, so
  // allow 2% here.
  const auto qwen30 = test::shipped_model("qwen3-30b-a3b");
  CHECK(model::total_parameters(qwen30) == Approx(30.5e9).epsilon(0.01));
  CHECK(model::active_parameters(qwen30) == Approx(3.3e9).epsilon(0.02));

  // Qwen3-235B-A22B (Hugging Face model card): 235B total, 22B activated.
  const auto qwen235 = test::shipped_model("qwen3-235b-a22b");
  CHECK(model::total_parameters(qwen235) == Approx(235e9).epsilon(0.01));
  CHECK(model::active_parameters(qwen235) == Approx(22e9).epsilon(0.01));

  // gpt-oss-120b (OpenAI model card, Table 1): 116.83B total; 5.13B active,
  // which counts the unembedding but not the embedding ("Embed + Unembed"
  // 1.16B, 0.58B each), so ptsim's active count is 5.13 + 0.58 = 5.71B.
  const auto oss = test::shipped_model("gpt-oss-120b");
  CHECK(model::total_parameters(oss) == Approx(116.83e9).epsilon(0.01));
  CHECK(model::active_parameters(oss) == Approx(5.13e9 + 0.58e9).epsilon(0.01));

  // Kimi K2 (Moonshot AI's model card, MoonshotAI/Kimi-K2 README, "Model
  // Summary"): 1T total, 32B activated, both rounded; the activated count
  // leaves out the input embedding (163840 · 7168 = 1.17B), as DeepSeek's does.
  const auto kimi = test::shipped_model("kimi-k2");
  CHECK(model::total_parameters(kimi) == Approx(1.0e12).epsilon(0.03));
  CHECK(model::active_parameters(kimi) - model::embedding_parameters(kimi) == Approx(32e9).epsilon(0.01));
}

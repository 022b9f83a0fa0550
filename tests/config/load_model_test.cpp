// Model files: both formats, and every way a model file is rejected.
#include "ptsim/config/load_model.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "ptsim/common/error.hpp"
#include "test_support.hpp"

using namespace ptsim;
using nlohmann::json;

namespace {
model::ModelSpec parse(const json& j) { return config::parse_model(j, "m.json", "fallback"); }

json tiny() {
  return json{{"num_layers", 2},     {"hidden_size", 64}, {"num_attention_heads", 4},
              {"vocab_size", 1000}, {"seq_length", 32}};
}
}  // namespace

TEST_CASE("Megatron-style model files take Megatron's defaults", "[config]") {
  const auto m = parse(tiny());
  CHECK(m.name == "fallback");
  CHECK(m.num_query_groups == 4);
  CHECK(m.ffn_hidden_size == 256);  // 4h
  CHECK(m.kv_channels == 16);       // h / a
  CHECK(m.activation == model::Activation::Gelu);
  CHECK(m.normalization == model::Normalization::LayerNorm);
  CHECK(m.tie_embeddings);
  CHECK(m.dropout == 0.1);
  const auto gpt3 = test::shipped_model("gpt3-175b");
  CHECK(gpt3.num_layers == 96);
  CHECK(gpt3.hidden_size == 12288);
}

TEST_CASE("Hugging Face configs are read as published", "[config]") {
  const auto llama = test::shipped_model("llama3-70b");
  CHECK(llama.num_layers == 80);
  CHECK(llama.hidden_size == 8192);
  CHECK(llama.num_query_groups == 8);
  CHECK(llama.ffn_hidden_size == 28672);
  CHECK(llama.vocab_size == 128256);
  CHECK(llama.activation == model::Activation::SwiGlu);
  CHECK(llama.normalization == model::Normalization::RmsNorm);
  CHECK(llama.position_embedding == model::PositionEmbedding::Rope);
  CHECK_FALSE(llama.tie_embeddings);
  CHECK(llama.dropout == 0.0);
  CHECK(llama.name == "llama3-70b");
  // Llama 3.1 405B: rope_scaling records the 8192-token pre-training length.
  CHECK(test::shipped_model("llama3-405b").seq_length == 8192);
  const auto gpt2 = test::shipped_model("gpt2");
  CHECK(gpt2.num_layers == 12);
  CHECK(gpt2.ffn_hidden_size == 3072);
  CHECK(gpt2.seq_length == 1024);
  const auto bert = test::shipped_model("bert-large");
  CHECK(bert.num_layers == 24);
  CHECK(bert.seq_length == 512);
  CHECK(bert.vocab_size == 30522);
}

TEST_CASE("Qwen2 and Phi-3 configs give their model cards' parameter counts", "[config]") {
  // The keys of Qwen/Qwen2.5-7B's config.json that shape training. Its model
  // card: 7.61B parameters; by hand, 2·152064·3584 embeddings + 28 layers of
  // (3584·(3584+2·512) + (3584+2·512) QKV with biases + 3584² output
  // + 3·3584·18944 SwiGLU MLP + 2·3584 norms) + 3584 = 7,615,616,512.
  const json qwen = {{"architectures", {"Qwen2ForCausalLM"}}, {"model_type", "qwen2"}, {"hidden_act", "silu"},
                     {"hidden_size", 3584}, {"intermediate_size", 18944}, {"max_position_embeddings", 131072},
                     {"num_attention_heads", 28}, {"num_hidden_layers", 28}, {"num_key_value_heads", 4},
                     {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000.0}, {"sliding_window", 131072},
                     {"tie_word_embeddings", false}, {"use_sliding_window", false}, {"vocab_size", 152064}};
  const auto q = parse(qwen);
  CHECK(q.add_qkv_bias);
  CHECK_FALSE(q.add_bias_linear);
  CHECK(model::total_parameters(q) == 7'615'616'512);
  // No rope_scaling: the sequence is max_position_embeddings, and says so.
  CHECK(q.seq_length == 131072);
  CHECK(q.seq_length_from == "max_position_embeddings");
  // microsoft/Phi-3-mini-4k-instruct: 3.8B; by hand 2·32064·3072 + 32 ·
  // (3072·9216 + 3072² + 3072·16384 + 8192·3072 + 2·3072) + 3072 = 3,821,079,552.
  const json phi = {{"architectures", {"Phi3ForCausalLM"}}, {"model_type", "phi3"}, {"hidden_act", "silu"},
                    {"hidden_size", 3072}, {"intermediate_size", 8192}, {"max_position_embeddings", 4096},
                    {"num_attention_heads", 32}, {"num_hidden_layers", 32}, {"num_key_value_heads", 32},
                    {"original_max_position_embeddings", 4096}, {"rms_norm_eps", 1e-5}, {"sliding_window", 2047},
                    {"tie_word_embeddings", false}, {"vocab_size", 32064}};
  const auto p = parse(phi);
  CHECK(model::total_parameters(p) == 3'821'079'552);
  CHECK(p.sliding_window == 2047);
  CHECK(p.sliding_window_layers == std::vector<std::uint8_t>(32, 1));
  // Phi-3-mini-128k: a 131072 window over a 4096-token pre-training length.
  json phi_long = phi;
  phi_long["max_position_embeddings"] = 131072;
  phi_long["rope_scaling"] = {{"type", "longrope"}, {"long_factor", {1.0, 1.1}}, {"short_factor", {1.0, 1.0}}};
  CHECK(parse(phi_long).seq_length == 4096);
  // Llama 3.1: the pre-training length from rope_scaling; Llama 2's null rope_scaling is none.
  CHECK(test::shipped_model("llama3-405b").seq_length_from == "rope_scaling.original_max_position_embeddings");
  CHECK(test::shipped_model("llama2-7b").seq_length == 4096);
}

TEST_CASE("Nemotron configs give squared-ReLU MLPs of one projection and the report's parameter count", "[config]") {
  // Nemotron-4 15B (Parmar et al. 2024, arXiv 2402.16819, Table 1: 32
  // layers, hidden 6144, 48 heads, 8 KV heads, sequence 4096, vocabulary
  // 256,000; "3.2B embedding and 12.5B non-embedding parameters") as
  // transformers' NemotronConfig names it, FFN 4h = 24576. By hand: a layer
  // is 6144·(6144 + 2·8·128) QKV + 6144² output + 2·6144·24576 MLP + two
  // LayerNorms of 2·6144 = 390,094,848; 32 of them and the final norm
  // (12,288) make 12,483,047,424; untied embeddings 2·256000·6144.
  const json n4 = {{"model_type", "nemotron"},
                   {"hidden_act", "relu2"},
                   {"hidden_size", 6144},
                   {"intermediate_size", 24576},
                   {"max_position_embeddings", 4096},
                   {"num_attention_heads", 48},
                   {"num_hidden_layers", 32},
                   {"num_key_value_heads", 8},
                   {"partial_rotary_factor", 0.5},
                   {"tie_word_embeddings", false},
                   {"vocab_size", 256000}};
  const auto m = parse(n4);
  CHECK(m.activation == model::Activation::SquaredRelu);
  CHECK_FALSE(m.gated_mlp());
  CHECK(m.normalization == model::Normalization::LayerNorm);
  CHECK_FALSE(m.add_bias_linear);
  CHECK(model::embedding_parameters(m) == 256000LL * 6144);  // the input table; the output layer is its own
  CHECK(model::total_parameters(m) == 12'483'047'424 + 2 * 256000LL * 6144);
  // Megatron-style files name it too; another gate is not squared ReLU.
  json file = tiny();
  file["activation"] = "squared-relu";
  CHECK(parse(file).activation == model::Activation::SquaredRelu);
  json silu = n4;
  silu["hidden_act"] = "silu";
  CHECK_THROWS_WITH(parse(silu), Catch::Contains("/hidden_act = \"silu\" is not one of the accepted values"));
}

TEST_CASE("Gemma and Gemma 2 configs give their model cards' parameter counts", "[config]") {
  // The Gemma 2 report (arXiv 2408.00118, Table 1) gives non-embedding
  // parameters, 2,024,517,888 for 2B, 8,324,201,984 for 9B and
  // 26,047,480,320 for 27B: the layers and the final norm. Its embedding
  // counts are of a 256,128-row table; the configs' vocab_size is 256,000.
  // google/gemma-2-2b-it as shipped: 26 layers of (2304·(8 + 2·4)·256 QKV
  // + 8·256·2304 output + 3·2304·9216 GeGLU + 4·2304 norms) + 2304, and
  // 256000·2304 tied embeddings.
  const auto g2b = test::shipped_model("gemma2-2b-it");
  CHECK(g2b.activation == model::Activation::GeGlu);
  CHECK(g2b.post_sublayer_norms);
  CHECK(g2b.kv_channels == 256);  // head_dim, not 2304 / 8
  CHECK(g2b.tie_embeddings);
  CHECK(model::total_parameters(g2b) - model::embedding_parameters(g2b) == 2'024'517'888);
  CHECK(model::total_parameters(g2b) == 2'024'517'888 + 256000LL * 2304);
  CHECK(g2b.seq_length == 8192);
  // transformers' Gemma 2: layer i slides when i is even; the others attend fully.
  CHECK(g2b.sliding_window == 4096);
  REQUIRE(g2b.sliding_window_layers.size() == 26);
  CHECK(g2b.is_sliding_window_layer(0));
  CHECK_FALSE(g2b.is_sliding_window_layer(1));
  CHECK(g2b.is_sliding_window_layer(24));
  CHECK_FALSE(g2b.is_sliding_window_layer(25));
  CHECK(g2b.attn_logit_softcapping == 50.0);
  CHECK(g2b.final_logit_softcapping == 30.0);
  // gemma-2-9b and gemma-2-27b: the keys that shape training, with 27B's
  // 128-wide heads.
  json g9 = {{"model_type", "gemma2"}, {"hidden_activation", "gelu_pytorch_tanh"}, {"head_dim", 256},
             {"hidden_size", 3584}, {"intermediate_size", 14336}, {"max_position_embeddings", 8192},
             {"num_attention_heads", 16}, {"num_hidden_layers", 42}, {"num_key_value_heads", 8},
             {"sliding_window", 4096}, {"vocab_size", 256000}};
  CHECK(model::total_parameters(parse(g9)) == 8'324'201'984 + 256000LL * 3584);
  json g27 = g9;
  g27["head_dim"] = 128;
  g27["hidden_size"] = 4608;
  g27["intermediate_size"] = 36864;
  g27["num_attention_heads"] = 32;
  g27["num_hidden_layers"] = 46;
  g27["num_key_value_heads"] = 16;
  CHECK(model::total_parameters(parse(g27)) == 26'047'480'320 + 256000LL * 4608);
  // google/gemma-7b: two norms a layer, full attention; the Gemma report
  // (arXiv 2403.08295, Table 2): 7,751,248,896 non-embedding parameters.
  const json g7 = {{"model_type", "gemma"}, {"hidden_act", "gelu"}, {"head_dim", 256}, {"hidden_size", 3072},
                   {"intermediate_size", 24576}, {"max_position_embeddings", 8192}, {"num_attention_heads", 16},
                   {"num_hidden_layers", 28}, {"num_key_value_heads", 16}, {"vocab_size", 256000}};
  const auto gemma = parse(g7);
  CHECK_FALSE(gemma.post_sublayer_norms);
  CHECK(gemma.sliding_window == 0);
  CHECK(model::total_parameters(gemma) == 7'751'248'896 + 256000LL * 3072);
  // A gate activation Gemma does not use is refused, not taken for GeGLU.
  json relu = g7;
  relu["hidden_act"] = "relu";
  CHECK_THROWS_WITH(parse(relu), Catch::Contains("/hidden_act = \"relu\" is not one of the accepted values"));
}

TEST_CASE("Model files are rejected with the key, the value and the fix", "[config]") {
  json j = tiny();
  SECTION("unknown key") {
    j["hidden"] = 5;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("unknown key 'hidden'") &&
                                    Catch::Contains("accepted keys"));
  }
  SECTION("missing key") {
    j.erase("vocab_size");
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/vocab_size is missing"));
  }
  SECTION("wrong type") {
    j["num_layers"] = "24";
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/num_layers = \"24\" must be an integer"));
  }
  SECTION("non-positive size") {
    j["hidden_size"] = 0;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/hidden_size = 0 is out of range"));
  }
  SECTION("absurd size") {
    j["seq_length"] = std::int64_t{1} << 40;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/seq_length = 1099511627776 is out of range"));
  }
  SECTION("fractional size") {
    j["num_layers"] = 2.5;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("must be a whole number"));
  }
  SECTION("bad enum") {
    j["activation"] = "relu";
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/activation = \"relu\" is not one of the "
                                                "accepted values: gelu, swiglu, geglu"));
  }
  SECTION("heads not dividing hidden") {
    j["num_attention_heads"] = 3;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("must divide hidden_size = 64"));
  }
  SECTION("query groups not dividing heads") {
    j["num_query_groups"] = 3;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("num_query_groups = 3 must divide "
                                                "num_attention_heads = 4"));
  }
  SECTION("dropout out of range") {
    j["dropout"] = 1.5;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/dropout = 1.5 is out of range"));
  }
  SECTION("not an object") {
    CHECK_THROWS_WITH(parse(json::array()), Catch::Contains("must be a JSON object"));
  }
}

TEST_CASE("Hugging Face configs outside what ptsim models are rejected", "[config]") {
  json hf = {{"model_type", "llama"},        {"num_hidden_layers", 2},
             {"hidden_size", 64},            {"num_attention_heads", 4},
             {"intermediate_size", 128},     {"vocab_size", 100},
             {"max_position_embeddings", 32}, {"hidden_act", "silu"}};
  CHECK(parse(hf).num_layers == 2);
  SECTION("unknown family") {
    hf["model_type"] = "t5";
    CHECK_THROWS_WITH(parse(hf), Catch::Contains("/model_type = \"t5\" is not one of the "
                                                 "accepted values"));
  }
  SECTION("experts in a dense family") {
    hf["num_local_experts"] = 8;
    CHECK_THROWS_WITH(parse(hf),
                      Catch::Contains("/num_local_experts = 8: model_type = llama is a "
                                      "dense family") &&
                          Catch::Contains("mixtral, qwen3_moe, deepseek_v3, deepseek_v4, kimi_k2 or gpt_oss"));
  }
  SECTION("missing dimension") {
    hf.erase("intermediate_size");
    CHECK_THROWS_WITH(parse(hf), Catch::Contains("/intermediate_size is missing"));
  }
}

TEST_CASE("Mixture-of-experts Hugging Face configs are read as published", "[config]") {
  const auto mixtral = test::shipped_model("mixtral-8x7b");
  CHECK(mixtral.num_layers == 32);
  CHECK(mixtral.num_moe_experts == 8);
  CHECK(mixtral.moe_router_topk == 2);
  CHECK(mixtral.moe_ffn_hidden_size == 14336);  // intermediate_size is the expert width
  CHECK(mixtral.is_moe_layer(0));
  CHECK(mixtral.sliding_window == 0);  // "sliding_window": null in v0.1
  CHECK_FALSE(mixtral.is_sliding_window_layer(0));
  CHECK(mixtral.seq_length == 32768);

  const auto deepseek = test::shipped_model("deepseek-v3");
  CHECK(deepseek.num_layers == 61);
  CHECK(deepseek.multi_latent_attention);
  CHECK(deepseek.q_lora_rank == 1536);
  CHECK(deepseek.kv_lora_rank == 512);
  CHECK(deepseek.qk_head_dim == 128);          // qk_nope_head_dim
  CHECK(deepseek.qk_pos_emb_head_dim == 64);   // qk_rope_head_dim
  CHECK(deepseek.v_head_dim == 128);
  CHECK(deepseek.kv_channels == 128 + 64);     // width of the score product q·k
  CHECK(deepseek.num_query_groups == 128);
  CHECK(deepseek.num_moe_experts == 256);
  CHECK(deepseek.moe_router_topk == 8);
  CHECK(deepseek.moe_ffn_hidden_size == 2048);
  CHECK(deepseek.moe_shared_expert_intermediate_size == 1 * 2048);  // n_shared_experts × width
  CHECK(deepseek.first_dense_layers == 3);
  CHECK(deepseek.ffn_hidden_size == 18432);    // the dense layers' width
  CHECK_FALSE(deepseek.is_moe_layer(2));
  CHECK(deepseek.is_moe_layer(3));
  CHECK(deepseek.seq_length == 4096);          // YaRN's original_max_position_embeddings
  CHECK_FALSE(deepseek.tie_embeddings);

  const auto qwen = test::shipped_model("qwen3-30b-a3b");
  CHECK(qwen.qk_layernorm);
  CHECK(qwen.kv_channels == 128);  // head_dim, not 2048 / 32
  CHECK(qwen.num_query_groups == 4);
  CHECK(qwen.num_moe_experts == 128);
  CHECK(qwen.moe_router_topk == 8);
  CHECK(qwen.moe_ffn_hidden_size == 768);
  CHECK(qwen.first_dense_layers == 0);
  CHECK(qwen.seq_length == 40960);
  CHECK(test::shipped_model("qwen3-235b-a22b").num_layers == 94);

  const auto oss = test::shipped_model("gpt-oss-120b");
  CHECK(oss.num_layers == 36);
  CHECK(oss.kv_channels == 64);
  CHECK(oss.num_query_groups == 8);
  CHECK(oss.num_moe_experts == 128);
  CHECK(oss.moe_router_topk == 4);
  CHECK(oss.moe_ffn_hidden_size == 2880);
  CHECK(oss.add_bias_linear);  // attention_bias
  CHECK(oss.sliding_window == 128);
  CHECK(oss.is_sliding_window_layer(0));  // layer_types alternates, sliding first
  CHECK_FALSE(oss.is_sliding_window_layer(1));
  CHECK(oss.is_sliding_window_layer(34));
  CHECK_FALSE(oss.is_sliding_window_layer(35));
  CHECK(oss.seq_length == 4096);  // YaRN's original_max_position_embeddings
  CHECK_FALSE(oss.tie_embeddings);
}

TEST_CASE("Megatron-style files take MoE, MLA and sliding-window keys", "[config]") {
  json j = tiny();
  j["num_moe_experts"] = 8;
  j["moe_router_topk"] = 2;
  j["moe_ffn_hidden_size"] = 32;
  j["moe_shared_expert_intermediate_size"] = 64;
  j["first_dense_layers"] = 1;
  j["sliding_window"] = 16;
  j["sliding_window_layers"] = json::array({1, 0});
  j["qk_layernorm"] = true;
  auto m = parse(j);
  CHECK(m.num_moe_experts == 8);
  CHECK(m.moe_router_topk == 2);
  CHECK(m.moe_ffn_hidden_size == 32);
  CHECK(m.moe_shared_expert_intermediate_size == 64);
  CHECK_FALSE(m.is_moe_layer(0));
  CHECK(m.is_moe_layer(1));
  CHECK(m.is_sliding_window_layer(0));
  CHECK_FALSE(m.is_sliding_window_layer(1));
  CHECK(m.qk_layernorm);

  j["sliding_window_layers"] = json::array({false, true});
  CHECK(parse(j).is_sliding_window_layer(1));
  j.erase("sliding_window_layers");  // a window alone applies to every layer
  CHECK(parse(j).is_sliding_window_layer(0));
  CHECK(parse(j).is_sliding_window_layer(1));

  json mla = tiny();
  mla["multi_latent_attention"] = true;
  mla["kv_lora_rank"] = 32;
  mla["qk_head_dim"] = 16;
  mla["qk_pos_emb_head_dim"] = 8;
  mla["v_head_dim"] = 16;
  m = parse(mla);
  CHECK(m.multi_latent_attention);
  CHECK(m.q_lora_rank == 0);
  CHECK(m.kv_lora_rank == 32);
  CHECK(m.kv_channels == 16 + 8);
}

TEST_CASE("Bad MoE, MLA and sliding-window keys are rejected with the rule and the fix",
          "[config]") {
  json j = tiny();
  j["num_moe_experts"] = 8;
  j["moe_router_topk"] = 2;
  j["moe_ffn_hidden_size"] = 32;
  CHECK(parse(j).is_moe());
  SECTION("top-k above the experts") {
    j["moe_router_topk"] = 9;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("m.json: /moe_router_topk = 9 must be in [1, "
                                                "num_moe_experts = 8]") &&
                                    Catch::Contains("lower moe_router_topk"));
  }
  SECTION("top-k zero") {
    j["moe_router_topk"] = 0;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/moe_router_topk = 0 must be in [1, "
                                                "num_moe_experts = 8]"));
  }
  SECTION("top-k missing") {
    j.erase("moe_router_topk");
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/moe_router_topk is missing; it is required "
                                                "when num_moe_experts = 8"));
  }
  SECTION("expert width missing") {
    j.erase("moe_ffn_hidden_size");
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/moe_ffn_hidden_size is missing; it is required "
                                                "when num_moe_experts = 8"));
  }
  SECTION("no MoE layer left") {
    j["first_dense_layers"] = 2;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/first_dense_layers = 2 must be less than "
                                                "num_layers = 2"));
  }
  SECTION("MoE key in a dense model") {
    j.erase("num_moe_experts");
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/moe_router_topk = 2 applies only to "
                                                "mixture-of-experts models; set "
                                                "num_moe_experts > 0"));
  }
  SECTION("too many experts") {
    j["num_moe_experts"] = 1 << 20;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/num_moe_experts = 1048576 is out of range"));
  }
  json mla = tiny();
  mla["multi_latent_attention"] = true;
  mla["kv_lora_rank"] = 32;
  mla["qk_head_dim"] = 16;
  mla["qk_pos_emb_head_dim"] = 8;
  mla["v_head_dim"] = 16;
  CHECK(parse(mla).multi_latent_attention);
  SECTION("MLA without its latent width") {
    mla.erase("kv_lora_rank");
    CHECK_THROWS_WITH(parse(mla), Catch::Contains("/kv_lora_rank is missing; "
                                                  "multi_latent_attention needs it > 0"));
  }
  SECTION("MLA with a zero head width") {
    mla["v_head_dim"] = 0;
    CHECK_THROWS_WITH(parse(mla), Catch::Contains("/v_head_dim = 0 is out of range"));
  }
  SECTION("MLA key without MLA") {
    mla["multi_latent_attention"] = false;
    CHECK_THROWS_WITH(parse(mla), Catch::Contains("applies only to multi-head latent attention"));
  }
  SECTION("MLA with key/value groups") {
    mla["num_query_groups"] = 2;
    CHECK_THROWS_WITH(parse(mla), Catch::Contains("/num_query_groups = 2 must equal "
                                                  "num_attention_heads = 4"));
  }
  SECTION("MLA with a different kv_channels") {
    mla["kv_channels"] = 16;
    CHECK_THROWS_WITH(parse(mla), Catch::Contains("/kv_channels = 16 must equal qk_head_dim + "
                                                  "qk_pos_emb_head_dim = 24"));
  }
  SECTION("MLA with qk_layernorm") {
    mla["qk_layernorm"] = true;
    CHECK_THROWS_WITH(parse(mla), Catch::Contains("/qk_layernorm = true cannot be combined"));
  }
  json sw = tiny();
  SECTION("sliding-window layers without a window") {
    sw["sliding_window_layers"] = json::array({1, 0});
    CHECK_THROWS_WITH(parse(sw), Catch::Contains("/sliding_window_layers = [1,0] needs "
                                                 "sliding_window > 0"));
  }
  SECTION("sliding-window layers of the wrong length") {
    sw["sliding_window"] = 8;
    sw["sliding_window_layers"] = json::array({1, 0, 1});
    CHECK_THROWS_WITH(parse(sw), Catch::Contains("has 3 entries; it must have exactly "
                                                 "num_layers = 2"));
  }
  SECTION("sliding-window layer flag out of range") {
    sw["sliding_window"] = 8;
    sw["sliding_window_layers"] = json::array({2, 0});
    CHECK_THROWS_WITH(parse(sw), Catch::Contains("has the entry 2; each entry must be 0, 1, "
                                                 "false or true"));
  }
}

TEST_CASE("Hugging Face MoE configs outside what ptsim models are rejected", "[config]") {
  json hf = {{"model_type", "qwen3_moe"},   {"num_hidden_layers", 2},
             {"hidden_size", 64},           {"num_attention_heads", 4},
             {"num_key_value_heads", 2},    {"head_dim", 32},
             {"intermediate_size", 128},    {"moe_intermediate_size", 32},
             {"num_experts", 8},            {"num_experts_per_tok", 2},
             {"decoder_sparse_step", 1},    {"mlp_only_layers", json::array()},
             {"vocab_size", 100},           {"max_position_embeddings", 32},
             {"hidden_act", "silu"},        {"norm_topk_prob", true}};
  const auto m = parse(hf);
  CHECK(m.num_moe_experts == 8);
  CHECK(m.qk_layernorm);
  SECTION("MoE every other layer") {
    hf["decoder_sparse_step"] = 2;
    CHECK_THROWS_WITH(parse(hf), Catch::Contains("/decoder_sparse_step = 2 must be 1"));
  }
  SECTION("dense layers by index") {
    hf["mlp_only_layers"] = json::array({0});
    CHECK_THROWS_WITH(parse(hf), Catch::Contains("/mlp_only_layers = [0] must be empty"));
  }
  SECTION("more experts per token than experts") {
    hf["num_experts_per_tok"] = 9;
    CHECK_THROWS_WITH(parse(hf), Catch::Contains("/num_experts_per_tok = 9 must be in [1, "
                                                 "num_experts = 8]"));
  }
  SECTION("no explicit head width") {
    hf.erase("head_dim");
    CHECK_THROWS_WITH(parse(hf), Catch::Contains("/head_dim is missing"));
  }
  SECTION("gpt-oss layer types") {
    hf["model_type"] = "gpt_oss";
    hf["num_local_experts"] = 8;
    hf["sliding_window"] = 8;
    hf["layer_types"] = json::array({"sliding_attention", "global"});
    CHECK_THROWS_WITH(parse(hf), Catch::Contains("has the entry \"global\""));
  }
}

TEST_CASE("Unreadable and malformed model files are rejected", "[config]") {
  CHECK_THROWS_WITH(config::load_model(test::data_path("does-not-exist.json"), test::unchecked_inputs()),
                    Catch::Contains("cannot open the file"));
  CHECK_THROWS_WITH(config::load_model(test::data_path("malformed.json"), test::unchecked_inputs()),
                    Catch::Contains("malformed.json: not valid JSON"));
}

TEST_CASE("Numbers beyond a double are a ConfigError naming the file (fuzz_model's first finding)",
          "[config]") {
  const std::string path = test::scratch_path("overflow.json");
  std::ofstream(path) << R"({"num_layers": 2, "hidden_size": 1e400})";
  CHECK_THROWS_AS(config::load_model(path, test::unchecked_inputs()), ConfigError);
  CHECK_THROWS_WITH(config::load_model(path, test::unchecked_inputs()),
                    Catch::Contains(path + ": a number is out of range"));
}

TEST_CASE("A model beyond 1e15 parameters is refused before any count overflows", "[config]") {
  // 100 layers × 3 · 2^20 · 2^23 (the MLP alone) = 2.64e15 parameters, each
  // width within the loader's per-key limits.
  json j = tiny();
  j["num_layers"] = 100;
  j["hidden_size"] = 1 << 20;
  j["num_attention_heads"] = 8;
  j["ffn_hidden_size"] = 1 << 23;
  CHECK_THROWS_WITH(parse(j), Catch::Contains("beyond ptsim's limit of 1e+15") &&
                                  Catch::Contains("num_layers = 100, hidden_size = 1048576"));
  // GPT-3's 175e9 is far below it.
  CHECK_NOTHROW(config::load_model(test::source_path("configs/models/gpt3-175b.json"), test::unchecked_inputs()));
}

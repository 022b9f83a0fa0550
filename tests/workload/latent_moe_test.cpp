// Latent MoE and a hybrid model's multi-token prediction (Nemotron 3 Super):
// parameters against Megatron-Bridge's verification card, the MoE layer's
// projections, experts and exchanges at the latent width against hand counts
// of MoELayer (megatron/core/transformer/moe/moe_layer.py at d98e8a64dd), the
// MTP depths' layers, and the three readers.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptsim/config/load_model.hpp"
#include "ptsim/config/megatron_args.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/workload/boundary_ops.hpp"
#include "ptsim/workload/layer_ops.hpp"
#include "ptsim/workload/stage_parameters.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

// Nemotron 3 Super: h 4096; Mamba-2 with 128 heads of 64 (d_inner 8192), 8
// groups of state 128; GQA with 32 heads of 128 and 2 key/value heads; 512
// experts of 2688 (squared ReLU, top 22) on a latent of 1024, a shared
// expert of 5376; vocabulary 131072, untied; no linear biases; RMSNorm.
constexpr double kH = 4096, kInner = 8192, kLatent = 1024, kExperts = 512, kTopK = 22, kWidth = 2688;
constexpr double kShared = 5376;
constexpr double kInProj = 2 * kInner + 2 * 8 * 128 + 128;  // z, x, B, C, dt
constexpr double kConv = kInner + 2 * 8 * 128;              // x, B, C
constexpr double kMambaLayer = kH + kH * kInProj + kConv * 5 + 3 * 128 + kInner + kInner * kH;
constexpr double kAttentionLayer = kH + kH * (32 * 128 + 2 * 2 * 128) + 32 * 128 * kH;
constexpr double kMoeLayer = kH + kH * kExperts + 2 * kH * kLatent + kExperts * 2 * kLatent * kWidth + 2 * kH * kShared;
constexpr double kMtpDepth = 2 * kH * kH + 3 * kH + kAttentionLayer + kMoeLayer;

// One sequence of 8,192 tokens on a rank of EP 64 (8 local experts).
workload::MicroShape ep64() {
  workload::MicroShape s;
  s.seq_length = 8192;
  s.ep = 64;
  return s;
}

int count_named(const std::vector<workload::OpSpec>& ops, const std::string& name) {
  int n = 0;
  for (const auto& op : ops) n += op.name == name ? 1 : 0;
  return n;
}

double forward_flops(const workload::BlockOps& ops) {
  double total = 0;
  for (const auto& op : ops.forward) total += op.flops;
  return total;
}

nlohmann::json small_latent_hybrid() {
  return {{"num_layers", 3},
          {"hybrid_layer_pattern", "M*E/*E/*E"},
          {"hidden_size", 256},
          {"num_attention_heads", 4},
          {"num_moe_experts", 8},
          {"moe_router_topk", 2},
          {"moe_ffn_hidden_size", 128},
          {"moe_latent_size", 64},
          {"vocab_size", 1000},
          {"seq_length", 512}};
}

void check_refused(const nlohmann::json& j, const std::string& expected) {
  CHECK_THROWS_WITH(config::parse_model(j, "m.json", "m"), Catch::Contains(expected));
}

}  // namespace

TEST_CASE("Nemotron 3 Super's parameters are the elements its verification card exported", "[model][hybrid][moe]") {
  const auto m = test::shipped_model("nemotron-3-super-120b-a12b");
  const double embedding = 2 * 131072 * kH + kH;  // input embedding, LM head, final norm
  const double main = 40 * kMambaLayer + 8 * kAttentionLayer + 40 * kMoeLayer + embedding;
  // Two MTP depths of attention and MoE, one shared weight set.
  CHECK(m.mtp_num_layers == 2);
  CHECK(m.mtp_weight_sets() == 1);
  CHECK(static_cast<double>(model::mtp_depth_parameters(m)) == kMtpDepth);
  CHECK(static_cast<double>(model::total_parameters(m)) == main + kMtpDepth);
  // Megatron-Bridge's card (examples/model_verification_cards/nemotron-3-super-120b-a12b,
  // 067f987df): the HF export has 123,611,033,088 elements, the 41 fp32
  // router correction biases (512 each; Megatron keeps them as buffers) among them.
  CHECK(model::total_parameters(m) + 41 * 512 == 123'611'033'088LL);
  // Without the shared weight set each depth has its own.
  auto separate = m;
  separate.mtp_use_repeated_layer = false;
  CHECK(static_cast<double>(model::total_parameters(separate)) == main + 2 * kMtpDepth);
}

TEST_CASE("Nemotron 3.5 Lightning is Nano with one shared MTP depth: its verification card's parameters",
          "[model][hybrid]") {
  const auto nano = test::shipped_model("nemotron-3-nano-30b-a3b");
  const auto m = test::shipped_model("nemotron-3.5-lightning-30b-a3b");
  CHECK(m.mtp_num_layers == 2);
  CHECK(m.mtp_layer_pattern == "*E");
  CHECK(m.mtp_weight_sets() == 1);
  // Nano's attention layer and MoE layer (h 2688, 128 experts of 1856, a
  // shared expert of 3712), eh_proj and three norms.
  const double h = 2688;
  const double attention = h + h * (32 * 128 + 2 * 2 * 128) + 32 * 128 * h;
  const double moe = h + h * 128 + 128 * 2 * h * 1856 + 2 * h * 3712;
  CHECK(static_cast<double>(model::total_parameters(m)) ==
        static_cast<double>(model::total_parameters(nano)) + 2 * h * h + 3 * h + attention + moe);
  // Megatron-Bridge's card (examples/model_verification_cards/nemotron-3.5-lightning,
  // 067f987df): 32,913,266,240 parameters, the 24 router correction biases
  // (128 each, buffers in Megatron) among them.
  CHECK(model::total_parameters(m) + 24 * 128 == 32'913'266'240LL);
}

TEST_CASE("Nemotron 3 Ultra's parameters are its name's 550B and 55B active", "[model][hybrid][moe]") {
  const auto m = test::shipped_model("nemotron-3-ultra-550b-a55b");
  // h 8192; Mamba-2 of 256 heads of 64 (d_inner 16384), 8 groups of state 128;
  // 64 attention heads of 128, 2 key/value heads; 512 experts of 5120 on a
  // latent of 2048, top 22, a shared expert of 10240; 48 Mamba, 12 attention
  // and 48 MoE layers.
  const double h = 8192, inner = 16384, in_proj = 2 * inner + 2 * 8 * 128 + 256, conv = inner + 2 * 8 * 128;
  const double mamba = h + h * in_proj + conv * 5 + 3 * 256 + inner + inner * h;
  const double attention = h + h * (64 * 128 + 2 * 2 * 128) + 64 * 128 * h;
  const auto moe = [&](double experts) {
    return h + h * 512 + 2 * h * 2048 + experts * 2 * 2048 * 5120 + 2 * h * 10240;
  };
  const double ends = 2 * 131072 * h + h;
  const double total = 48 * mamba + 12 * attention + 48 * moe(512) + ends;
  CHECK(static_cast<double>(model::total_parameters(m)) == total + 2 * h * h + 3 * h + attention + moe(512));
  CHECK(static_cast<double>(model::active_parameters(m)) == 48 * mamba + 12 * attention + 48 * moe(22) + ends);
  CHECK(total / 1e9 == Approx(550).epsilon(0.005));
  CHECK(static_cast<double>(model::active_parameters(m)) / 1e9 == Approx(55).epsilon(0.025));
}

TEST_CASE("A latent MoE layer routes on h and runs its experts and exchanges at the latent width", "[workload][moe]") {
  const auto m = test::shipped_model("nemotron-3-super-120b-a12b");
  REQUIRE(m.is_moe_layer(1));
  const double T = 8192;
  const auto ops = workload::transformer_layer_ops(m, ep64(), 1);
  CHECK(test::op_named(ops.forward, "moe.router").flops == Approx(2 * T * kH * kExperts));
  CHECK(test::op_named(ops.forward, "moe.fc1_latent_proj").flops == Approx(2 * T * kH * kLatent));
  CHECK(test::op_named(ops.forward, "moe.fc2_latent_proj").flops == Approx(2 * T * kLatent * kH));
  // The experts read and write the latent: 2·T·k·(L·2688) each way.
  CHECK(test::op_named(ops.forward, "moe.experts.fc1").flops == Approx(2 * T * kTopK * kLatent * kWidth));
  CHECK(test::op_named(ops.forward, "moe.experts.fc2").flops == Approx(2 * T * kTopK * kWidth * kLatent));
  // Each token copy travels at the latent width, 2 bytes an element.
  CHECK(static_cast<double>(test::op_named(ops.forward, "moe.dispatch").bytes) == Approx(T * kTopK * kLatent * 2));
  CHECK(static_cast<double>(test::op_named(ops.forward, "moe.combine").bytes) == Approx(T * kTopK * kLatent * 2));
  // The up projection keeps its bf16 input for its weight gradient, which frees it.
  CHECK(static_cast<double>(test::op_named(ops.forward, "moe.fc2_latent_proj").saved_bytes) == 2 * T * kLatent);
  CHECK(static_cast<double>(test::op_named(ops.backward, "moe.fc2_latent_proj.wgrad").freed_bytes) == 2 * T * kLatent);
  CHECK(test::op_named(ops.backward, "moe.fc1_latent_proj.wgrad").flops == Approx(2 * kH * kLatent * T));
  // The router's backward stays at h.
  CHECK(test::op_named(ops.backward, "moe.router.dgrad").flops == Approx(2 * T * kExperts * kH));
  // Under FP8 the projections are two more quantized weights of the layer:
  // the experts' fc1 and fc2, the shared expert's two, the projections' two.
  CHECK(workload::fp8_gemms_per_layer(m, 1) == 6);
}

TEST_CASE("The latent projections are whole on every TP rank and summed over TP under SP", "[workload][moe]") {
  const auto m = test::shipped_model("nemotron-3-super-120b-a12b");
  strategy::ParallelConfig c;
  c.tp = 2;
  c.ep = 64;
  c.sequence_parallel = true;
  const auto p = workload::layer_parameters_per_rank(m, c, 1);
  // 8 local experts at the latent width; router and latent projections
  // whole, the shared expert split.
  CHECK(static_cast<double>(p.expert) == 8 * 2 * kLatent * kWidth);
  CHECK(static_cast<double>(p.dense) == kH + kH * kExperts + 2 * kH * kLatent + 2 * kH * kShared / 2);
  CHECK(static_cast<double>(workload::layer_tp_replicated_parameters(m, c, 1)) ==
        kH + kH * kExperts + 2 * kH * kLatent);
}

TEST_CASE("A hybrid model's MTP depths run their pattern's layers and share one weight set", "[workload][hybrid]") {
  const auto m = test::shipped_model("nemotron-3-super-120b-a12b");
  // Built as the main pattern's first attention layer (7) and first MoE layer (1).
  CHECK(m.mtp_layer_kinds() == std::vector<std::int64_t>{7, 1});
  workload::MicroShape s = ep64();
  const auto last = workload::last_stage_ops(m, s);
  CHECK(count_named(last.forward, "moe.fc1_latent_proj") == 2);
  CHECK(count_named(last.backward, "moe.fc1_latent_proj.wgrad") == 2);
  // Each depth: eh_proj (2h → h), its attention and MoE layers, and the LM head.
  const double T = 8192;
  const double depth = 2 * T * 2 * kH * kH + forward_flops(workload::transformer_layer_ops(m, s, 7)) +
                       forward_flops(workload::transformer_layer_ops(m, s, 1)) +
                       forward_flops(workload::output_ops(m, s));
  CHECK(forward_flops(last) == Approx(forward_flops(workload::output_ops(m, s)) + 2 * depth));
  // The last stage holds the depth's weights once (its own LM head aside).
  strategy::ParallelConfig c;
  c.ep = 64;
  const auto one = workload::mtp_parameters_per_rank(m, c, false);
  auto separate = m;
  separate.mtp_use_repeated_layer = false;
  const auto two = workload::mtp_parameters_per_rank(separate, c, false);
  CHECK(two.dense == 2 * one.dense);
  CHECK(two.expert == 2 * one.expert);
  CHECK(static_cast<double>(one.expert) == 8 * 2 * kLatent * kWidth);
}

TEST_CASE("Megatron's unified hybrid pattern gives the MTP depths and is checked", "[config][hybrid]") {
  const auto m = config::parse_model(small_latent_hybrid(), "m.json", "m");
  CHECK(m.hybrid_layer_pattern == "M*E");
  CHECK(m.mtp_layer_pattern == "*E");
  CHECK(m.mtp_num_layers == 2);
  CHECK(!m.mtp_use_repeated_layer);
  CHECK(m.moe_token_width() == 64);

  auto j = small_latent_hybrid();
  j["hybrid_layer_pattern"] = "M*E/*E/E";
  check_refused(j, "every depth after '/' needs the same layers");
  j["hybrid_layer_pattern"] = "M*E//*E";
  check_refused(j, "(empty)");
  j["hybrid_layer_pattern"] = "M*E/-E";
  check_refused(j, "has no layer of its kind in the main pattern");
  j = small_latent_hybrid();
  j["mtp_num_layers"] = 3;
  check_refused(j, "disagrees with hybrid_layer_pattern's 2 MTP depths");
  j["hybrid_layer_pattern"] = "M*E";
  check_refused(j, "append one segment a depth");
  j = small_latent_hybrid();
  j["hybrid_layer_pattern"] = "M*-";
  j["num_moe_experts"] = 0;
  for (const char* key : {"moe_router_topk", "moe_ffn_hidden_size"}) j.erase(key);
  check_refused(j, "moe_latent_size");
  j = small_latent_hybrid();
  j["hybrid_layer_pattern"] = "M*E";
  j["mtp_use_repeated_layer"] = true;
  check_refused(j, "applies only to models with multi-token prediction");
}

TEST_CASE("Nemotron 3 Super's Hugging Face config and Megatron launch line give the shipped model",
          "[config][hybrid]") {
  const auto shipped = test::shipped_model("nemotron-3-super-120b-a12b");
  // The training-relevant keys of nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16's config.json
  // (intermediate_size, the dense MLP's width, as Megatron's --ffn-hidden-size:
  // no layer of the pattern has a dense MLP).
  const nlohmann::json hf = {{"model_type", "nemotron_h"},
                             {"architectures", {"NemotronHForCausalLM"}},
                             {"num_hidden_layers", 88},
                             {"hidden_size", 4096},
                             {"num_attention_heads", 32},
                             {"num_key_value_heads", 2},
                             {"head_dim", 128},
                             {"intermediate_size", 2688},
                             {"vocab_size", 131072},
                             {"max_position_embeddings", 8192},
                             {"hybrid_override_pattern", shipped.hybrid_layer_pattern},
                             {"mamba_num_heads", 128},
                             {"mamba_head_dim", 64},
                             {"ssm_state_size", 128},
                             {"n_groups", 8},
                             {"conv_kernel", 4},
                             {"mlp_hidden_act", "relu2"},
                             {"n_routed_experts", 512},
                             {"num_experts_per_tok", 22},
                             {"moe_intermediate_size", 2688},
                             {"moe_shared_expert_intermediate_size", 5376},
                             {"moe_latent_size", 1024},
                             {"num_nextn_predict_layers", 1},
                             {"mtp_hybrid_override_pattern", "*E"},
                             {"tie_word_embeddings", false},
                             {"mlp_bias", false},
                             {"attention_bias", false},
                             {"mamba_proj_bias", false}};
  const auto m = config::parse_model(hf, "config.json", "super");
  CHECK(m.moe_latent_size == 1024);
  CHECK(m.mtp_layer_pattern == "*E");
  CHECK(m.mtp_use_repeated_layer);  // Megatron-Bridge's default for these configs
  // One depth in the Hub's config, two in the recipe: one weight set either way.
  CHECK(model::total_parameters(m) == model::total_parameters(shipped));
  nlohmann::json no_pattern = hf;
  no_pattern.erase("mtp_hybrid_override_pattern");
  CHECK_THROWS_WITH(config::parse_model(no_pattern, "config.json", "super"),
                    Catch::Contains("mtp_hybrid_override_pattern"));

  // Megatron-LM's own launch line for the model (examples/post_training/
  // modelopt/conf/nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16.sh), with the
  // recipe's two repeated MTP depths.
  const std::vector<std::string> base = {"--num-layers",
                                         "88",
                                         "--hidden-size",
                                         "4096",
                                         "--num-attention-heads",
                                         "32",
                                         "--group-query-attention",
                                         "--num-query-groups",
                                         "2",
                                         "--kv-channels",
                                         "128",
                                         "--ffn-hidden-size",
                                         "2688",
                                         "--squared-relu",
                                         "--normalization",
                                         "RMSNorm",
                                         "--position-embedding-type",
                                         "none",
                                         "--untie-embeddings-and-output-weights",
                                         "--disable-bias-linear",
                                         "--max-position-embeddings",
                                         "8192",
                                         "--seq-length",
                                         "8192",
                                         "--vocab-size",
                                         "131072",
                                         "--num-experts",
                                         "512",
                                         "--moe-router-topk",
                                         "22",
                                         "--moe-shared-expert-intermediate-size",
                                         "5376",
                                         "--moe-latent-size",
                                         "1024",
                                         "--is-hybrid-model",
                                         "--mamba-num-heads",
                                         "128",
                                         "--mamba-head-dim",
                                         "64",
                                         "--mtp-num-layers",
                                         "2",
                                         "--mtp-use-repeated-layer",
                                         "--micro-batch-size",
                                         "1",
                                         "--global-batch-size",
                                         "64"};
  const std::string main_pattern = shipped.hybrid_layer_pattern;
  auto unified = base;
  unified.insert(unified.end(), {"--hybrid-layer-pattern", main_pattern + "/*E/*E"});
  const auto launch = config::parse_megatron_args(unified);
  CHECK(launch.model.mtp_num_layers == 2);
  CHECK(model::total_parameters(launch.model) == model::total_parameters(shipped));
  CHECK(launch.not_modelled.empty());
  // The legacy form: the depth's pattern apart, repeated --mtp-num-layers times.
  auto legacy = base;
  legacy.insert(legacy.end(), {"--hybrid-layer-pattern", main_pattern, "--mtp-hybrid-override-pattern", "*E"});
  const auto old = config::parse_megatron_args(legacy);
  CHECK(old.model.mtp_layer_pattern == "*E");
  CHECK(old.model.mtp_num_layers == 2);
  CHECK(model::total_parameters(old.model) == model::total_parameters(shipped));
}

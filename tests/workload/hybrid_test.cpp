// Hybrid models (Megatron-Core's hybrid stack, Nemotron 3 Nano): parameters
// against the model card, the Mamba-2 layer's ops against hand counts of
// MambaMixer and the SSD algorithm (Dao & Gu 2024, §6), and what is refused.
#include <string>

#include <nlohmann/json.hpp>

#include "ptsim/common/error.hpp"
#include "ptsim/config/load_model.hpp"
#include "ptsim/config/megatron_args.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/simulate/kernel_inventory.hpp"
#include "ptsim/workload/layer_ops.hpp"
#include "ptsim/workload/stage_parameters.hpp"
#include "ptsim/workload/step_workload.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

// Nemotron 3 Nano: h 2688; Mamba-2 with 64 heads of 64 (d_inner 4096), 8
// groups of state 128; GQA with 32 heads of 128 and 2 key/value heads; 128
// experts of 1856 (squared ReLU, top 6) and a shared expert of 3712;
// vocabulary 131072, untied; no linear biases; RMSNorm.
constexpr double kH = 2688, kInner = 4096, kHeads = 64, kHeadDim = 64, kGroups = 8, kState = 128;
constexpr double kInProj = 2 * kInner + 2 * kGroups * kState + kHeads;  // z, x, B, C, dt: 10304
constexpr double kConv = kInner + 2 * kGroups * kState;                 // x, B, C: 6144

constexpr double kMambaLayer = kH + kH * kInProj + kConv * 5 + 3 * kHeads + kInner + kInner * kH;
constexpr double kAttentionLayer = kH + kH * (32 * 128 + 2 * 2 * 128) + 32 * 128 * kH;
constexpr double kExpert = 2 * kH * 1856;
constexpr double kMoeLayerShared = kH + kH * 128 + 2 * kH * 3712;

workload::MicroShape one_sequence(std::int64_t tp = 1) {
  workload::MicroShape s;
  s.seq_length = 8192;
  s.tp = tp;
  return s;
}

double forward(const workload::BlockOps& ops, double workload::OpSpec::*field) {
  double total = 0;
  for (const auto& op : ops.forward) total += op.*field;
  return total;
}

double saved(const workload::BlockOps& ops) {
  double total = 0;
  for (const auto& op : ops.forward) total += static_cast<double>(op.saved_bytes);
  return total;
}

double freed(const workload::BlockOps& ops) {
  double total = 0;
  for (const auto& op : ops.backward) total += static_cast<double>(op.freed_bytes);
  return total;
}

nlohmann::json small_hybrid() {
  return {{"num_layers", 4},    {"hybrid_layer_pattern", "M*-M"},
          {"hidden_size", 256}, {"num_attention_heads", 4},
          {"vocab_size", 1000}, {"seq_length", 512}};
}

void check_refused(nlohmann::json j, const std::string& expected) {
  CHECK_THROWS_WITH(config::parse_model(j, "m.json", "m"), Catch::Contains(expected));
}

}  // namespace

TEST_CASE("Nemotron 3 Nano's parameters are the model card's 31.6B and 3.6B active", "[model][hybrid]") {
  const auto m = test::shipped_model("nemotron-3-nano-30b-a3b");
  // 23 Mamba layers, 6 attention layers, 23 MoE layers; embedding and head.
  const double embedding = 2 * 131072 * kH + kH;
  const double total = 23 * kMambaLayer + 6 * kAttentionLayer + 23 * (kMoeLayerShared + 128 * kExpert) + embedding;
  const double active = 23 * kMambaLayer + 6 * kAttentionLayer + 23 * (kMoeLayerShared + 6 * kExpert) + embedding;
  CHECK(static_cast<double>(model::total_parameters(m)) == total);
  CHECK(static_cast<double>(model::active_parameters(m)) == active);
  // NVIDIA's model card: 31.6B total, 3.6B active with the embeddings.
  CHECK(total / 1e9 == Approx(31.6).epsilon(0.005));
  CHECK(active / 1e9 == Approx(3.6).epsilon(0.01));
  CHECK(workload::layer_kind_key(m, workload::MicroShape{}, 0) == "mamba");
  CHECK(workload::layer_kind_key(m, workload::MicroShape{}, 1) == "moe_mlp");
  CHECK(workload::layer_kind_key(m, workload::MicroShape{}, 5) == "attention");
}

TEST_CASE("TP splits a Mamba mixer by heads and groups, its pre-norm whole", "[workload][hybrid]") {
  const auto m = test::shipped_model("nemotron-3-nano-30b-a3b");
  strategy::ParallelConfig c;
  c.tp = 2;
  const auto p = workload::layer_parameters_per_rank(m, c, 0);
  CHECK(static_cast<double>(p.dense) == kH + (kMambaLayer - kH) / 2);
  CHECK(p.expert == 0);
  // Under SP only the pre-norm is replicated over TP (no biases).
  c.sequence_parallel = true;
  CHECK(static_cast<double>(workload::layer_tp_replicated_parameters(m, c, 0)) == kH);
  // Muon takes the output projection only (in_proj is marked use_muon = False).
  const auto w = workload::layer_weight_matrices(m, c, 0);
  REQUIRE(w.size() == 1);
  CHECK(w[0].elements() == kH * kInner / 2);
}

TEST_CASE("A Mamba layer's FLOPs are its projections' and the SSD's chunked products", "[workload][hybrid]") {
  const auto m = test::shipped_model("nemotron-3-nano-30b-a3b");
  const double T = 8192, Q = 128, chunks = T / Q;
  for (const std::int64_t tp : {1, 2}) {
    const double t = static_cast<double>(tp);
    const auto ops = workload::transformer_layer_ops(m, one_sequence(tp), 0);
    const double heads = kHeads / t, groups = kGroups / t;
    // Bᵀ·x states, C·Bᵀ per group, and C·states + (C·Bᵀ∘L)·x.
    const double ssd = 2 * chunks * heads * Q * kHeadDim * kState + 2 * chunks * groups * Q * Q * kState +
                       2 * chunks * heads * Q * kHeadDim * (Q + kState);
    const double projections = 2 * T * kH * kInProj / t + 2 * T * kInner / t * kH;
    CHECK(forward(ops, &workload::OpSpec::flops) == Approx(projections + ssd));
  }
}

TEST_CASE("A Mamba layer keeps its input, the SSD's input and output, and the norm's", "[workload][hybrid]") {
  const auto m = test::shipped_model("nemotron-3-nano-30b-a3b");
  const double T = 8192;
  const auto ops = workload::transformer_layer_ops(m, one_sequence(), 0);
  // bf16: the pre-norm's input and the in_proj's (its output), zxBCdt
  // (kept by the memory-efficient SSD), y before its gate, the gated
  // norm's input and the out_proj's input.
  CHECK(saved(ops) == 2 * T * (kH + kH + kInProj + 3 * kInner));
  CHECK(freed(ops) == saved(ops));
}

TEST_CASE("A hybrid layer pattern is read with Megatron's symbols and checked", "[config][hybrid]") {
  const auto m = config::parse_model(small_hybrid(), "m.json", "m");
  CHECK(m.is_mamba_layer(0));
  CHECK((m.has_attention(1) && !m.has_mlp(1)));
  CHECK((m.has_mlp(2) && !m.has_attention(2) && !m.is_moe_layer(2)));
  // TransformerConfig's defaults: head dim 64, state 128, 8 groups, 2h/64 heads.
  CHECK(m.mamba_num_heads == 8);
  CHECK(m.norms_per_layer() == 1);

  auto j = small_hybrid();
  j["hybrid_layer_pattern"] = "M*-";
  check_refused(j, "needs exactly num_layers = 4");
  j["hybrid_layer_pattern"] = "M*|M";
  check_refused(j, "has '|' at position 2");
  j["hybrid_layer_pattern"] = "M*EM";
  check_refused(j, "has MoE layers (E) but num_moe_experts is 0");
  j = small_hybrid();
  j.erase("hybrid_layer_pattern");
  j["mamba_state_dim"] = 64;
  check_refused(j, "applies only to hybrid models");
  j = small_hybrid();
  j["mamba_num_heads"] = 6;
  check_refused(j, "must divide mamba_num_heads = 6");
  j = small_hybrid();
  j["mtp_num_layers"] = 1;
  check_refused(j, "append one segment a depth");
}

TEST_CASE("What ptsim does not build for hybrid models is refused by name", "[config][hybrid]") {
  const auto m = test::shipped_model("nemotron-3-nano-30b-a3b");
  config::StrategyInput s;
  s.gpus = 8;
  s.ep = 8;
  s.global_batch_size = 8;
  SECTION("context parallelism") {
    s.cp = 2;
    s.ep = 2;
    CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains("is not simulated for hybrid models"));
  }
  SECTION("torchtitan's modules") {
    s.kernel_fusion = "eager";
    CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains("a hybrid layer pattern"));
  }
  SECTION("a step is built") {
    const auto run = config::resolve_run(m, s);
    const auto step = workload::build_step_workload(run.model, run.parallel);
    CHECK(step.model_flops > 0);
  }
}

TEST_CASE("Nemotron 3 Nano's Hugging Face config and Megatron launch line give the shipped model", "[config][hybrid]") {
  const auto shipped = test::shipped_model("nemotron-3-nano-30b-a3b");
  // The training-relevant keys of nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B's config.json.
  const nlohmann::json hf = {{"model_type", "nemotron_h"},
                             {"architectures", {"NemotronHForCausalLM"}},
                             {"num_hidden_layers", 52},
                             {"hidden_size", 2688},
                             {"num_attention_heads", 32},
                             {"num_key_value_heads", 2},
                             {"head_dim", 128},
                             {"intermediate_size", 1856},
                             {"vocab_size", 131072},
                             {"max_position_embeddings", 262144},
                             {"hybrid_override_pattern", shipped.hybrid_layer_pattern},
                             {"mamba_num_heads", 64},
                             {"mamba_head_dim", 64},
                             {"ssm_state_size", 128},
                             {"n_groups", 8},
                             {"conv_kernel", 4},
                             {"chunk_size", 128},
                             {"expand", 2},
                             {"mlp_hidden_act", "relu2"},
                             {"mamba_hidden_act", "silu"},
                             {"n_routed_experts", 128},
                             {"num_experts_per_tok", 6},
                             {"moe_intermediate_size", 1856},
                             {"moe_shared_expert_intermediate_size", 3712},
                             {"n_shared_experts", 1},
                             {"tie_word_embeddings", false},
                             {"mlp_bias", false},
                             {"attention_bias", false},
                             {"mamba_proj_bias", false}};
  const auto m = config::parse_model(hf, "config.json", "nano");
  CHECK(m.hybrid_layer_pattern == shipped.hybrid_layer_pattern);
  CHECK(model::total_parameters(m) == model::total_parameters(shipped));
  CHECK(model::active_parameters(m) == model::active_parameters(shipped));
  CHECK(m.position_embedding == model::PositionEmbedding::None);
  // Later configs name the layers in a list.
  nlohmann::json listed = hf;
  listed.erase("hybrid_override_pattern");
  listed["layers_block_type"] = nlohmann::json::array();
  for (const char c : shipped.hybrid_layer_pattern)
    listed["layers_block_type"].push_back(c == 'M' ? "mamba" : c == 'E' ? "moe" : "attention");
  CHECK(config::parse_model(listed, "config.json", "nano").hybrid_layer_pattern == shipped.hybrid_layer_pattern);
  listed["layers_block_type"][3] = "ssm";
  CHECK_THROWS_WITH(config::parse_model(listed, "config.json", "nano"), Catch::Contains("has the entry \"ssm\""));

  std::vector<std::string> args = {"--num-layers",
                                   "52",
                                   "--hidden-size",
                                   "2688",
                                   "--num-attention-heads",
                                   "32",
                                   "--group-query-attention",
                                   "--num-query-groups",
                                   "2",
                                   "--kv-channels",
                                   "128",
                                   "--ffn-hidden-size",
                                   "1856",
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
                                   "128",
                                   "--moe-router-topk",
                                   "6",
                                   "--moe-ffn-hidden-size",
                                   "1856",
                                   "--moe-shared-expert-intermediate-size",
                                   "3712",
                                   "--is-hybrid-model",
                                   "--hybrid-override-pattern",
                                   shipped.hybrid_layer_pattern,
                                   "--mamba-num-heads",
                                   "64",
                                   "--mamba-head-dim",
                                   "64",
                                   "--mamba-state-dim",
                                   "128",
                                   "--mamba-num-groups",
                                   "8",
                                   "--micro-batch-size",
                                   "1",
                                   "--global-batch-size",
                                   "8"};
  const auto launch = config::parse_megatron_args(args);
  CHECK(launch.model.hybrid_layer_pattern == shipped.hybrid_layer_pattern);
  CHECK(model::total_parameters(launch.model) == model::total_parameters(shipped));
  CHECK(launch.not_modelled.empty());
}

TEST_CASE("The SSD forward on an H100 is priced near the Triton kernels' measured time", "[workload][hybrid]") {
  // vLLM PR #27299 (2025-10-25, one H100, the Triton _mamba_chunk_scan_combined_fwd
  // that mamba_ssm's training path also runs, "Original" column): 8,192 tokens of
  // granite-4.0-h-small's mixer (128 heads of 64, 1 group, state 128) at
  // 1.262e7 tokens/s, 649 us for the five forward kernels.
  nlohmann::json probe = {{"num_layers", 1},
                          {"hybrid_layer_pattern", "M"},
                          {"hidden_size", 4096},
                          {"num_attention_heads", 32},
                          {"mamba_num_heads", 128},
                          {"mamba_head_dim", 64},
                          {"mamba_state_dim", 128},
                          {"mamba_num_groups", 1},
                          {"vocab_size", 1024},
                          {"seq_length", 8192},
                          {"normalization", "rmsnorm"},
                          {"position_embedding_type", "none"},
                          {"add_bias_linear", false},
                          {"dropout", 0.0}};
  const auto m = config::parse_model(probe, "probe.json", "probe");
  config::StrategyInput s;
  s.gpus = 1;
  s.global_batch_size = 1;
  const auto run = config::resolve_run(m, s);
  double forward_ssd = 0;
  for (const auto& k : simulate::kernel_inventory(run.model, test::shipped_hardware("h100-sxm5-80gb"), run.parallel))
    for (std::size_t i = 0; i < k.names.size(); ++i)
      if (k.names[i].rfind("fwd.mamba.ssd.", 0) == 0) forward_ssd += k.seconds * static_cast<double>(k.name_counts[i]);
  const double measured = 8192 / 1.262327e7;
  // cost::kSsdScanBytesPerSmCycle is this measurement over the bytes
  // layer_mamba.cpp counts here (1,788,870,656): a change to either byte
  // count or constant that breaks the pair fails here. At HBM's rate alone
  // they took 605 us, 7% short.
  CHECK(forward_ssd == Approx(measured).epsilon(0.002));
}

// DeepSeek-V4's compressed attention and hyper-connections: the shipped
// Flash model's parameters against DeepSeek's published 284B, each layer
// kind's sparse attention against a hand count of the keys its queries
// attend to (csa.py: the window and the pooled keys, the indexer's top-k
// at ratio 4), the mHC modules' passes over the residual streams, and the
// readers and refusals.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptsim/config/load_model.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/strategy/recompute_modules.hpp"
#include "ptsim/workload/layer_ops.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

// DeepSeek-V4-Flash: h 4096; 64 query heads of 512 and one key/value head;
// query rank 1024; 8 output groups of rank 1024; window 128; indexer 64
// heads of 128 keeping 512; 256 experts of 2048 (SwiGLU, top 6) and one
// shared; 4 residual streams; vocabulary 129,280, untied; RMSNorm.
constexpr double kH = 4096, kHeads = 64, kD = 512, kQRank = 1024, kORank = 1024, kGroups = 8;
constexpr double kIndexHeads = 64, kIndexDim = 128, kTopK = 512, kWindow = 128, kStreams = 4;

double compressor(double ratio, double width) {
  const double coff = ratio == 4 ? 2 : 1;
  return 2 * kH * coff * width + ratio * coff * width + width;  // wkv, wgate, ape, norm
}

double attention(double ratio) {
  double p = kH * kQRank + kQRank + kQRank * kHeads * kD + kH * kD + kD;  // q_down, q_norm, q_up, kv_proj, kv_norm
  p += kORank * kHeads * kD + kGroups * kORank * kH + kHeads;             // wo_a, wo_b, sinks
  if (ratio > 1) p += compressor(ratio, kD);
  if (ratio == 4) p += kQRank * kIndexHeads * kIndexDim + kH * kIndexHeads + compressor(4, kIndexDim);
  return p;
}

double layer(double ratio) {
  const double mhc = 2 * (kStreams * kH * 24 + 24 + 3);  // n² + 2n = 24 mappings a module
  const double moe = kH * 256 + 257 * 3 * kH * 2048;     // router, 256 routed and 1 shared SwiGLU expert
  return 2 * kH + mhc + attention(ratio) + moe;
}

workload::MicroShape one_sequence(std::int64_t seq) {
  workload::MicroShape s;
  s.seq_length = seq;
  s.ep = 64;
  return s;
}

nlohmann::json small_v4() {
  return {{"model_type", "deepseek_v4"},
          {"num_hidden_layers", 4},
          {"hidden_size", 256},
          {"num_attention_heads", 8},
          {"num_key_value_heads", 1},
          {"head_dim", 128},
          {"qk_rope_head_dim", 32},
          {"q_lora_rank", 64},
          {"o_groups", 4},
          {"o_lora_rank", 64},
          {"sliding_window", 16},
          {"index_n_heads", 4},
          {"index_head_dim", 64},
          {"index_topk", 32},
          {"hc_mult", 4},
          {"hc_sinkhorn_iters", 20},
          {"n_routed_experts", 8},
          {"n_shared_experts", 1},
          {"num_experts_per_tok", 2},
          {"moe_intermediate_size", 128},
          {"num_nextn_predict_layers", 1},
          {"hidden_act", "silu"},
          {"vocab_size", 1280},
          {"max_position_embeddings", 512},
          {"compress_ratios", {0, 4, 128, 4, 0}}};
}

}  // namespace

TEST_CASE("DeepSeek-V4-Flash has its published 284 billion parameters", "[model][csa]") {
  const auto m = test::shipped_model("deepseek-v4-flash");
  REQUIRE(m.has_compressed_attention());
  CHECK(m.mtp_num_layers == 1);
  CHECK(m.moe_n_hash_layers == 3);
  // Two window-only layers, then ratio 4 and 128 alternating up to layer 42 (ratio 4).
  double main = 2 * layer(0) + 21 * layer(4) + 20 * layer(128) + 2 * 129280 * kH + kH;
  CHECK(static_cast<double>(model::total_parameters(m)) - static_cast<double>(model::mtp_depth_parameters(m)) ==
        Approx(main).epsilon(1e-12));
  // The MTP depth: e_proj and h_proj (2h · h), three norms and a window-only layer.
  CHECK(static_cast<double>(model::mtp_depth_parameters(m)) == Approx(2 * kH * kH + 3 * kH + layer(0)));
  // DeepSeek's model card: 284B total (the MTP module apart, as for DeepSeek-V3's 671B).
  CHECK(main == Approx(284e9).epsilon(0.002));
}

TEST_CASE("Each query attends to its window and the pooled keys its layer's ratio gives it", "[workload][csa]") {
  const auto m = test::shipped_model("deepseek-v4-flash");
  const auto shape = one_sequence(4096);
  const double s = 4096;
  // FLOPs of a query over `keys` keys of width 512, as key and as value.
  const auto flops = [&](double keys) { return 2 * kHeads * s * keys * (kD + kD); };
  for (const auto& [layer, keys] : {std::pair{0, kWindow}, {2, kWindow + kTopK}, {3, kWindow + s / 128}}) {
    const auto ops = workload::transformer_layer_ops(m, shape, layer);
    const auto& fwd = test::op_named(ops.forward, "attn.sparse");
    CHECK(fwd.kernel == taskgraph::KernelClass::SparseAttention);
    CHECK(fwd.flops == Approx(flops(keys)));
    CHECK(test::op_named(ops.backward, "attn.sparse.bwd").flops == Approx(2 * flops(keys)));
    // Only ratio 4 has the indexer: its loss's teacher scores the main
    // queries against the chosen pooled keys (no values).
    bool teacher = false;
    for (const auto& op : ops.forward) teacher = teacher || op.name == "attn.indexer.teacher";
    CHECK(teacher == (layer == 2));
  }
  const auto csa = workload::transformer_layer_ops(m, shape, 2);
  CHECK(test::op_named(csa.forward, "attn.indexer.teacher").flops == Approx(2 * kHeads * s * kTopK * kD));
  // The indexer's scores over the causally valid pooled keys (s/4, half on average).
  CHECK(test::op_named(csa.forward, "attn.indexer.scores").flops ==
        Approx(2 * s * kIndexHeads * kIndexDim * (s / 4) / 2));
  // The output projection: eight groups of 4,096 → 1,024, then 8,192 → 4,096.
  CHECK(test::op_named(csa.forward, "attn.wo_a").flops == Approx(2 * s * kGroups * (kHeads * kD / kGroups) * kORank));
  CHECK(test::op_named(csa.forward, "attn.wo_b").flops == Approx(2 * s * kGroups * kORank * kH));
}

TEST_CASE("Hyper-connections read and write the four residual streams around each sublayer", "[workload][csa]") {
  const auto m = test::shipped_model("deepseek-v4-flash");
  const double N = 4096, stream = 2 * N * kStreams * kH, single = 2 * N * kH, mappings = 4 * N * 24;
  const auto ops = workload::transformer_layer_ops(m, one_sequence(4096), 0);
  double bytes = 0, kernels = 0;
  for (const auto& op : ops.forward)
    if (op.name.find(".mhc.") != std::string::npos) {
      bytes += static_cast<double>(op.bytes);
      ++kernels;
    }
  // A sublayer: the mappings read the streams and write n² + 2n fp32 values
  // a token (read back by the aggregate's kernel: counted with them), the
  // aggregate reads the streams and writes one, and after the sublayer the
  // streams and its output are read and the streams written.
  CHECK(kernels == 6);
  CHECK(bytes == Approx(2 * ((stream + 2 * mappings) + (stream + single) + (2 * stream + single))));
  // No plain residual add is left.
  for (const auto& op : ops.forward) CHECK(op.name.find("residual_add") == std::string::npos);
}

TEST_CASE("Recomputing mhc frees the aggregates and the residual streams and reruns what made them",
          "[workload][csa]") {
  const auto m = test::shipped_model("deepseek-v4-flash");
  const double N = 4096, stream = 2 * N * kStreams * kH, single = 2 * N * kH;
  const auto ops = workload::transformer_layer_ops(m, one_sequence(4096), 0);
  double dropped = 0;
  std::vector<std::string> rerun;
  for (const auto& op : ops.forward) {
    dropped += static_cast<double>(op.dropped_bytes(strategy::kRecomputeMhc));
    if (op.rerun_by & strategy::kRecomputeMhc) rerun.push_back(op.name);
  }
  // Each sublayer: the n-stream residual its mappings keep and the aggregate
  // its norm keeps (CheckpointWithoutOutput frees both outputs); the
  // sublayer's output stays, a checkpoint input.
  CHECK(dropped == Approx(2 * (stream + single)));
  CHECK(rerun == std::vector<std::string>{"attn.mhc.aggregate", "attn.mhc.res_post_add", "mlp.mhc.aggregate",
                                          "mlp.mhc.res_post_add"});
}

TEST_CASE("DeepSeek-V4's Hugging Face layer types read as its compression ratios", "[config][csa]") {
  nlohmann::json j = small_v4();
  const auto direct = config::parse_model(j, "v4.json", "v4");
  CHECK(direct.csa_compress_ratios == std::vector<std::int64_t>{0, 4, 128, 4, 0});
  j.erase("compress_ratios");
  j["layer_types"] = {"sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention",
                      "compressed_sparse_attention"};
  j["compress_rates"] = {{"compressed_sparse_attention", 4}, {"heavily_compressed_attention", 128}};
  const auto typed = config::parse_model(j, "v4.json", "v4");
  // The bridge's padding: one window-only entry for the MTP depth.
  CHECK(typed.csa_compress_ratios == direct.csa_compress_ratios);
  CHECK(model::total_parameters(typed) == model::total_parameters(direct));
  j["compress_ratios"] = {0, 4, 128};
  j.erase("layer_types");
  CHECK_THROWS_WITH(config::parse_model(j, "v4.json", "v4"), Catch::Contains("compress_ratios"));
  j["compress_ratios"] = {4, 4, 128, 4, 0};  // an MTP depth of a ratio no main layer has
  CHECK_THROWS_WITH(config::parse_model(j, "v4.json", "v4"), Catch::Contains("MTP depth 0"));
}

TEST_CASE("DeepSeek-V4's attention runs at TP 1 and CP 1 as Megatron-Core's does", "[config][csa]") {
  const auto m = config::parse_model(small_v4(), "v4.json", "v4");
  config::StrategyInput s;
  s.gpus = 8;
  s.global_batch_size = 16;
  s.micro_batch_size = 1;
  s.tp = 2;
  CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains("supports TP 1 only"));
  s.tp = 1;
  s.cp = 2;
  CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains("compressed attention"));
  s.cp = 1;
  s.recompute = "selective";
  s.recompute_modules = "core_attn";
  CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains("checkpoint_core_attention"));
  s.recompute_modules = "mla_up_proj";
  CHECK_NOTHROW(config::resolve_run(m, s));
  // Its projections are not the attention module's QKV and output linears.
  s.precision = "nvfp4";
  s.module_precision = "attention=bf16";
  CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains("DeepSeek-V4's attention, whose projections"));
}

// Selective recomputation by module (Megatron-Core's recompute_modules): the
// ops each module reruns and the bytes the forward then does not keep,
// against hand counts from the model's dimensions.
#include "ptsim/workload/layer_ops.hpp"

#include <string>
#include <vector>

#include "test_support.hpp"

using namespace ptsim;

namespace {

// One sequence of 4096 tokens in bf16 on one GPU (tp 1, ep 1): N tokens
// enter every op, and every expert is local.
constexpr double kTokens = 4096;

workload::MicroShape one_gpu() {
  workload::MicroShape s;
  s.seq_length = static_cast<std::int64_t>(kTokens);
  return s;
}

std::vector<std::string> rerun(const workload::BlockOps& ops, strategy::RecomputeModules modules) {
  std::vector<std::string> names;
  for (const auto& op : ops.forward)
    if (op.rerun_by & modules) names.push_back(op.name);
  return names;
}

double dropped(const workload::BlockOps& ops, strategy::RecomputeModules modules) {
  double bytes = 0;
  for (const auto& op : ops.forward) bytes += static_cast<double>(op.saved_bytes - op.kept_bytes(modules));
  return bytes;
}

}  // namespace

TEST_CASE("Recomputing moe_act reruns the experts' activation and drops FC2's input", "[workload][recompute]") {
  // Qwen3-30B-A3B: top-8 of 128 experts, expert FFN width 768. On one GPU
  // every routed copy, N·k rows, reaches FC2 as bf16 of the FFN width.
  const auto m = test::shipped_model("qwen3-30b-a3b");
  const auto ops = workload::transformer_layer_ops(m, one_gpu(), 0);
  CHECK(rerun(ops, strategy::kRecomputeMoeAct) == std::vector<std::string>{"moe.experts.swiglu"});
  const double k = static_cast<double>(m.moe_router_topk), f = static_cast<double>(m.moe_ffn_hidden_size);
  CHECK(dropped(ops, strategy::kRecomputeMoeAct) == Approx(2 * kTokens * k * f));
}

TEST_CASE("Recomputing layernorm reruns only norms that are not fused into a linear", "[workload][recompute]") {
  // Megatron-Core's TE spec fuses a dense layer's norms into the QKV and FC1
  // linears (IdentityOp norms, which "layernorm" leaves alone).
  const auto llama = test::shipped_model("llama3-8b");
  const auto dense = workload::transformer_layer_ops(llama, one_gpu(), 0);
  CHECK(rerun(dense, strategy::kRecomputeLayernorm).empty());
  CHECK(dropped(dense, strategy::kRecomputeLayernorm) == 0);
  // Before an MoE layer the norm stands apart: it reruns, and the router's
  // copy of its bf16 output, N·h·2 bytes, is dropped.
  const auto qwen = test::shipped_model("qwen3-30b-a3b");
  const auto moe = workload::transformer_layer_ops(qwen, one_gpu(), 0);
  CHECK(rerun(moe, strategy::kRecomputeLayernorm) == std::vector<std::string>{"ln2"});
  CHECK(dropped(moe, strategy::kRecomputeLayernorm) == Approx(2 * kTokens * static_cast<double>(qwen.hidden_size)));
}

TEST_CASE("Recomputing mla_up_proj drops Q, K, V and the up projections' inputs, keeping the latents",
          "[workload][recompute]") {
  // DeepSeek-V3: 128 heads, query/key head width d_nope + d_rope, value width
  // d_v; latents of q_lora_rank and kv_lora_rank. The checkpoint keeps the
  // latents (the norms' inputs); attention's Q, K and V (bf16) and the
  // normalized latents the up projections keep are dropped.
  const auto m = test::shipped_model("deepseek-v3");
  const auto ops = workload::transformer_layer_ops(m, one_gpu(), 0);
  CHECK(rerun(ops, strategy::kRecomputeMlaUpProj) ==
        std::vector<std::string>{"attn.q_norm", "attn.q_up", "attn.kv_norm", "attn.kv_up", "attn.rope"});
  const double heads = static_cast<double>(m.num_attention_heads);
  const double qk = static_cast<double>(m.qk_head_dim + m.qk_pos_emb_head_dim), v = static_cast<double>(m.v_head_dim);
  const double qkv = 2 * kTokens * heads * (qk + qk + v);
  const double latents = 2 * kTokens * static_cast<double>(m.q_lora_rank + m.kv_lora_rank);
  CHECK(dropped(ops, strategy::kRecomputeMlaUpProj) == Approx(qkv + latents));
  // With core attention recomputed too, attention keeps nothing: its softmax
  // statistics (fp32, one per head and token) go as well.
  const double lse = 4 * heads * kTokens;
  CHECK(dropped(ops, strategy::kRecomputeMlaUpProj | strategy::kRecomputeCoreAttn) == Approx(qkv + latents + lse));
  // Before MLA the input norm stands apart; "layernorm" drops the bf16
  // normalized input the query's down projection keeps.
  CHECK(rerun(ops, strategy::kRecomputeLayernorm) == std::vector<std::string>{"ln1"});
  CHECK(dropped(ops, strategy::kRecomputeLayernorm) == Approx(2 * kTokens * static_cast<double>(m.hidden_size)));
}

TEST_CASE("Recomputing mlp checkpoints a dense layer's MLP, keeping only its input", "[workload][recompute]") {
  // Llama 3 8B, SwiGLU of width f: the MLP keeps FC1's input (h), the
  // activation's input (2f) and FC2's input (f), bf16; under "mlp" only the
  // module input stays, which the fused norm keeps.
  const auto m = test::shipped_model("llama3-8b");
  const auto ops = workload::transformer_layer_ops(m, one_gpu(), 0);
  const auto names = rerun(ops, strategy::kRecomputeMlp);
  CHECK(names == std::vector<std::string>{"ln2", "mlp.fc1", "mlp.swiglu", "mlp.fc2"});
  const double h = static_cast<double>(m.hidden_size), f = static_cast<double>(m.ffn_hidden_size);
  CHECK(dropped(ops, strategy::kRecomputeMlp) == Approx(2 * kTokens * (h + 2 * f + f)));
  // MoE layers have no dense MLP to checkpoint.
  const auto qwen = test::shipped_model("qwen3-30b-a3b");
  CHECK(rerun(workload::transformer_layer_ops(qwen, one_gpu(), 0), strategy::kRecomputeMlp).empty());
}

TEST_CASE("Recomputing moe reruns the whole MoE layer and keeps only the router's input", "[workload][recompute]") {
  const auto m = test::shipped_model("qwen3-30b-a3b");
  const auto ops = workload::transformer_layer_ops(m, one_gpu(), 0);
  double moe_saved = 0;
  std::size_t moe_ops = 0;
  for (const auto& op : ops.forward)
    if (op.name.rfind("moe.", 0) == 0) {
      moe_saved += static_cast<double>(op.saved_bytes);
      ++moe_ops;
      CHECK((op.rerun_by & strategy::kRecomputeMoe) != 0);
    }
  CHECK(moe_ops == rerun(ops, strategy::kRecomputeMoe).size());
  CHECK(dropped(ops, strategy::kRecomputeMoe) == Approx(moe_saved - 2 * kTokens * static_cast<double>(m.hidden_size)));
}

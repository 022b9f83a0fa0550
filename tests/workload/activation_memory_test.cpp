// Activation memory from the engine's own accounting (tensors allocated when
// forward ops run, freed when their backward has run) against Korthikanti et
// al. 2022, §4.1–4.2, for a GPT layer with dropout, 16-bit activations:
//   no TP:             s·b·h·(34 + 5·a·s/h)
//   TP t:              s·b·h·(10 + 24/t + 5·a·s/(h·t))
//   full recompute:    2·s·b·h
// Method: the peak grows by exactly one layer's saved tensors when a layer is
// added, everything else equal.
#include <nlohmann/json.hpp>

#include <cmath>

#include "ptsim/common/error.hpp"
#include "ptsim/workload/op_spec.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

constexpr double s = 512, b = 2, h = 1024, a = 16;

// `extra`: model keys added to the GPT layer's (Gemma 2's variants).
model::ModelSpec gpt(std::int64_t layers, const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json j = {{"num_layers", layers}, {"hidden_size", 1024}, {"num_attention_heads", 16},
                      {"vocab_size", 1024},   {"seq_length", 512},   {"dropout", 0.1}};
  j.update(extra);
  return config::parse_model(j, "test-gpt", "test-gpt");
}

double activation_peak(std::int64_t layers, std::int64_t tp, const std::string& recompute,
                       const std::string& attention = "unfused", bool sp = false,
                       const nlohmann::json& extra = nlohmann::json::object()) {
  config::StrategyInput st;
  st.gpus = tp;
  st.tp = tp;
  if (sp) st.sequence_parallel = true;
  st.global_batch_size = 2;
  st.micro_batch_size = 2;
  st.recompute = recompute;
  st.attention_backend = attention;  // unfused: the attention Korthikanti et al. analyse
  const auto out = test::simulate(gpt(layers, extra), test::shipped_hardware("a100-sxm4-80gb"), st);
  return static_cast<double>(out.result.memory.activations_peak_bytes);
}

double per_layer(std::int64_t tp, const std::string& recompute, const std::string& attention = "unfused",
                 bool sp = false, const nlohmann::json& extra = nlohmann::json::object()) {
  return activation_peak(5, tp, recompute, attention, sp, extra) -
         activation_peak(4, tp, recompute, attention, sp, extra);
}

// One layer's activations on H100 in bf16 or FP8 (no recomputation).
double per_layer_h100(std::int64_t tp, const std::string& attention, const std::string& precision) {
  const auto peak = [&](std::int64_t layers) {
    config::StrategyInput st;
    st.gpus = tp;
    st.tp = tp;
    st.global_batch_size = 2;
    st.micro_batch_size = 2;
    st.recompute = "none";
    st.attention_backend = attention;
    st.precision = precision;
    const auto out = test::simulate(gpt(layers), test::shipped_hardware("h100-sxm5-80gb"), st);
    return static_cast<double>(out.result.memory.activations_peak_bytes);
  };
  return peak(5) - peak(4);
}

}  // namespace

TEST_CASE("Activations per layer without TP: s·b·h·(34 + 5·a·s/h)", "[workload][memory]") {
  CHECK(per_layer(1, "none") == Approx(s * b * h * (34 + 5 * a * s / h)).epsilon(1e-9));
}

TEST_CASE("Activations per layer with TP t: s·b·h·(10 + 24/t + 5·a·s/(h·t))", "[workload][memory]") {
  for (const double t : {2.0, 4.0, 8.0})
    CHECK(per_layer(static_cast<std::int64_t>(t), "none") ==
          Approx(s * b * h * (10 + 24 / t + 5 * a * s / (h * t))).epsilon(1e-9));
}

TEST_CASE("Activations per layer with full recomputation: 2·s·b·h", "[workload][memory]") {
  CHECK(per_layer(1, "full") == Approx(2 * s * b * h).epsilon(1e-9));
  CHECK(per_layer(4, "full") == Approx(2 * s * b * h).epsilon(1e-9));
}

TEST_CASE("With fused attention no s×s tensor is kept: s·b·h·(10 + 24/t) + row statistics", "[workload][memory]") {
  // Flash attention saves Q, K, V (the 6/t of Korthikanti's 24/t it shares
  // with the unfused path) and an fp32 log-sum-exp per query row and head,
  // 4·b·(a/t)·s bytes, instead of the 5·a·s²·b/t bytes of scores and masks.
  for (const double t : {1.0, 4.0})
    CHECK(per_layer(static_cast<std::int64_t>(t), "none", "flash") ==
          Approx(s * b * h * (10 + 24 / t) + 4 * b * (a / t) * s).epsilon(1e-9));
}

TEST_CASE("Activations per layer with sequence parallelism: s·b·h·(34 + 5·a·s/h)/t", "[workload][memory]") {
  // Korthikanti et al. 2022, Table 2, "sequence parallelism".
  for (const double t : {2.0, 4.0})
    CHECK(per_layer(static_cast<std::int64_t>(t), "none", "unfused", true) ==
          Approx(s * b * h / t * (34 + 5 * a * s / h)).epsilon(1e-9));
}

TEST_CASE("Activations per layer with selective recomputation: s·b·h·(10 + 24/t), and 34/t with SP",
          "[workload][memory]") {
  // Korthikanti et al. 2022, Table 2: the 5·a·s/h term goes.
  for (const double t : {1.0, 4.0}) {
    CHECK(per_layer(static_cast<std::int64_t>(t), "selective") == Approx(s * b * h * (10 + 24 / t)).epsilon(1e-9));
    if (t > 1)
      CHECK(per_layer(static_cast<std::int64_t>(t), "selective", "unfused", true) ==
            Approx(s * b * h * 34 / t).epsilon(1e-9));
  }
}

TEST_CASE("With RoPE the attention checkpoint pins the QKV output: 4·s·b·h/t more a layer, less the statistics",
          "[workload][memory]") {
  // Megatron-Core's core_attn checkpoint saves the value as a view of the
  // QKV projection's output, so the pre-RoPE query and key (2·s·b·h/t bytes
  // each with MHA) stay beside the rotated copies until attention's
  // backward; the fp32 row statistics, 4·b·(a/t)·s, are what the checkpoint
  // drops (memory-oracle finding A7: ptsim was 6.3% short on Llama 70B).
  const nlohmann::json rope = {{"position_embedding_type", "rope"}};
  for (const double t : {1.0, 2.0}) {
    const auto tp = static_cast<std::int64_t>(t);
    CHECK(per_layer(tp, "selective", "flash", false, rope) - per_layer(tp, "none", "flash", false, rope) ==
          Approx(4 * s * b * h / t - 4 * b * (a / t) * s).epsilon(1e-9));
  }
  // Without RoPE the three views are the buffer: only the statistics go.
  CHECK(per_layer(2, "selective", "flash") - per_layer(2, "none", "flash") ==
        Approx(-4 * b * (a / 2) * s).epsilon(1e-9));
}

TEST_CASE("Under FP8 the linears keep their inputs in fp8: 1 byte an element instead of 2", "[workload][memory]") {
  // Transformer Engine keeps the quantized input of each FP8 linear for its
  // weight gradient, not the bf16 one: QKV's and FC1's (s·b·h each, the norm
  // output, replicated over TP) and FC2's (4·s·b·h/t) halve. The output
  // projection's input is the attention's output; fused attention keeps it in
  // bf16 for its own backward, so the fp8 copy comes beside it (+s·b·h/t);
  // unfused attention does not, and it halves like the others (−s·b·h/t).
  for (const double t : {1.0, 2.0, 4.0}) {
    const auto tp = static_cast<std::int64_t>(t);
    CHECK(per_layer_h100(tp, "flash", "fp8") - per_layer_h100(tp, "flash", "bf16") ==
          Approx(-s * b * h * (2 + 4 / t - 1 / t)).epsilon(1e-9));
    CHECK(per_layer_h100(tp, "unfused", "fp8") - per_layer_h100(tp, "unfused", "bf16") ==
          Approx(-s * b * h * (2 + 4 / t + 1 / t)).epsilon(1e-9));
  }
}

TEST_CASE("Gemma 2's post-sublayer norms keep their inputs: 4·s·b·h more a layer, /t under SP", "[workload][memory]") {
  // Two more norms a layer, each keeping its 16-bit input (s·b·h values,
  // replicated over TP without SP, sharded with it) for its backward.
  const nlohmann::json post = {{"post_sublayer_norms", true}};
  for (const double t : {1.0, 4.0}) {
    const auto tp = static_cast<std::int64_t>(t);
    CHECK(per_layer(tp, "none", "flash", false, post) - per_layer(tp, "none", "flash") ==
          Approx(4 * s * b * h).epsilon(1e-9));
    if (tp > 1)
      CHECK(per_layer(tp, "none", "flash", true, post) - per_layer(tp, "none", "flash", true) ==
            Approx(4 * s * b * h / t).epsilon(1e-9));
  }
  // GeGLU keeps what SwiGLU keeps: a gated MLP's shapes, whatever its gate.
  CHECK(per_layer(1, "none", "flash", false, {{"activation", "geglu"}}) ==
        Approx(per_layer(1, "none", "flash", false, {{"activation", "swiglu"}})).epsilon(1e-12));
}

TEST_CASE("Unfused attention soft-capping keeps a tanh per score: 2·a·s²·b/t more a layer", "[workload][memory]") {
  // cap·tanh(x/cap) over the b·(a/t)·s² scores, its 16-bit tanh kept for the
  // backward's 1 − tanh²; selective recomputation reruns it with the rest of
  // core attention.
  const nlohmann::json capped = {{"attn_logit_softcapping", 50.0}};
  for (const double t : {1.0, 4.0}) {
    const auto tp = static_cast<std::int64_t>(t);
    CHECK(per_layer(tp, "none", "unfused", false, capped) - per_layer(tp, "none") ==
          Approx(2 * a * s * s * b / t).epsilon(1e-9));
    CHECK(per_layer(tp, "selective", "unfused", false, capped) == Approx(per_layer(tp, "selective")).epsilon(1e-12));
  }
  // Fused attention applies it inside the kernel: nothing more is kept.
  CHECK(per_layer(1, "none", "flash", false, capped) == Approx(per_layer(1, "none", "flash")).epsilon(1e-12));
}

TEST_CASE("Tensors beyond 2^53 bytes are refused, not rounded or wrapped", "[workload]") {
  CHECK(workload::as_bytes(9007199254740992.0) == 9007199254740992ULL);  // 2^53 exactly
  CHECK(workload::as_bytes(1.5) == 2);
  CHECK_THROWS_WITH(workload::as_bytes(1e16), Catch::Contains("a tensor of 1e+16 bytes is beyond"));
  CHECK_THROWS_AS(workload::as_bytes(-1), ConfigError);
  CHECK_THROWS_AS(workload::as_bytes(std::nan("")), ConfigError);
}

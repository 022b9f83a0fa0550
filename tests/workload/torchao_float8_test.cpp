// torchtitan's FP8: torchao's Float8Linear (dynamic per-tensor scaling) in
// compiled blocks, against hand counts of its casts for Llama 3 8B and of
// FSDP2's float8 all-gather.
#include <string>
#include <vector>

#include "ptsim/workload/layer_ops.hpp"
#include "test_support.hpp"
#include "workload/op_totals.hpp"

using namespace ptsim;

namespace {

using Sum = test::OpTotals;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Sum sum(const std::vector<workload::OpSpec>& ops, const std::string& suffix) {
  return test::memory_op_totals(ops, [&](const std::string& name) { return ends_with(name, suffix); });
}

// `kernels` kernels moving `bytes` in all.
void check_kernels(const Sum& s, int kernels, double bytes) {
  CHECK(s.kernels == kernels);
  CHECK(s.bytes == Approx(bytes));
}

// Llama 3 8B (h 4096, query width 4096, key/value width 1024, FFN 14336),
// one micro-batch of 2 × 8192 tokens on one GPU, compiled blocks in FP8.
constexpr double N = 2 * 8192, h = 4096, q = 4096, kv = 1024, f = 14336;
// The seven linears' weights: wq, wk, wv, wo; w1, w3, w2.
constexpr double kWeights = h * q + 2 * h * kv + q * h + 3 * h * f;

workload::MicroShape float8_shape(bool weights_gathered, strategy::Fp8Recipe recipe = strategy::Fp8Recipe::Tensorwise) {
  workload::MicroShape s;
  s.micro_batch = 2;
  s.seq_length = 8192;
  s.kernel_fusion = strategy::KernelFusion::Compiled;
  s.gemm_dtype = Dtype::Fp8;
  s.quantization = strategy::quantization_of(Dtype::Fp8, recipe);
  s.fp8_weights_gathered = weights_gathered;
  return s;
}

config::StrategyInput torchtitan_float8(std::int64_t gpus) {
  config::StrategyInput st;
  st.gpus = gpus;
  st.global_batch_size = 2 * gpus;
  st.micro_batch_size = 2;
  st.seq_length = 8192;
  st.recompute = "op";
  st.fsdp = "fsdp2";
  st.kernel_fusion = "compiled";
  st.precision = "fp8";
  return st;
}

}  // namespace

TEST_CASE("torchao Float8 under torch.compile: one cast per distinct input, one per output gradient",
          "[workload][float8]") {
  const auto m = test::shipped_model("llama3-8b");
  const auto ops = workload::transformer_layer_ops(m, float8_shape(false), 0);
  // Forward: wq, wk and wv share the attention norm's output and w1 and w3
  // the MLP norm's, each cast once (read 2 after the norm's fused amax,
  // write 1 + 1: the row-wise copy and its transpose); wo's input and w2's
  // are read once more for their amax first.
  check_kernels(sum(ops.forward, ".fp8_cast"), 4, 4 * N * h + 6 * N * q + 4 * N * h + 6 * N * f);
  CHECK(sum(ops.forward, "attn.wk.fp8_cast").kernels == 0);
  CHECK(sum(ops.forward, "mlp.w3.fp8_cast").kernels == 0);
  // Backward: every linear's output gradient, amax then both copies, 6 bytes an element.
  check_kernels(sum(ops.backward, ".grad_fp8_cast"), 7, 6 * N * (q + 2 * kv + h + 2 * f + h));
  // The weights in every forward: amax (2) and cast (2 + 1), the fp8 copy
  // kept for the backward, whose column-major copy (1 + 1) frees it.
  const Sum weight = sum(ops.forward, ".fp8_weight_cast");
  check_kernels(weight, 7, 5 * kWeights);
  CHECK(weight.saved == Approx(kWeights));
  const Sum transpose = sum(ops.backward, ".fp8_weight_transpose");
  CHECK(transpose.kernels == 7);
  CHECK(transpose.bytes == Approx(2 * kWeights));
  CHECK(transpose.freed == Approx(kWeights));
  // Every linear GEMM in fp8, three a linear.
  int fp8_gemms = 0;
  for (const auto* list : {&ops.forward, &ops.backward})
    for (const auto& op : *list)
      if (op.kind == workload::OpKind::Matmul && op.dtype == Dtype::Fp8) ++fp8_gemms;
  CHECK(fp8_gemms == 3 * 7);
}

TEST_CASE("torchao's float8 all-gather hands the weights over cast: only their transposes remain",
          "[workload][float8]") {
  const auto m = test::shipped_model("llama3-8b");
  const auto ops = workload::transformer_layer_ops(m, float8_shape(true), 0);
  CHECK(sum(ops.forward, ".fp8_weight_cast").kernels == 0);
  const Sum transpose = sum(ops.backward, ".fp8_weight_transpose");
  CHECK(transpose.bytes == Approx(2 * kWeights));
  CHECK(transpose.freed == 0);
}

TEST_CASE("FSDP2 with torchao's float8 all-gather moves one byte a block parameter", "[simulate][float8][fsdp]") {
  // Llama 3 8B's block: the seven linears and two norms; the embedding,
  // output layer and final norm stay bf16 and are reduce-scattered once.
  constexpr double layer = kWeights + 2 * h;
  constexpr double boundary = 2.0 * 128256 * 4096 + 4096;
  auto st = torchtitan_float8(8);
  st.fp8_param_gather = true;
  const auto r = test::simulate(test::shipped_model("llama3-8b"), test::shipped_hardware("h100-sxm5-80gb"), st).result;
  // Every block gathered for its forward, all but the last again for its
  // backward, one byte each; fp32 gradients reduce-scattered; the weights'
  // amaxes (one fp32 a linear) all-reduced once after the optimizer.
  const double gathers = (32 + 31) * 1 * layer;
  const double reduce = 32 * 4 * layer + 4 * boundary;
  CHECK(static_cast<double>(r.communication.at("dp").bytes) == Approx(gathers + reduce + 4 * 7 * 32));
  // Without it, the bf16 gathers of FSDP2.
  st.fp8_param_gather.reset();
  const auto bf16_gather =
      test::simulate(test::shipped_model("llama3-8b"), test::shipped_hardware("h100-sxm5-80gb"), st).result;
  CHECK(static_cast<double>(bf16_gather.communication.at("dp").bytes) == Approx(2 * gathers + reduce));
}

TEST_CASE("torchao Float8 is refused where ptsim does not model it", "[config][float8]") {
  const auto m = test::shipped_model("llama3-8b");
  auto st = torchtitan_float8(8);
  st.kernel_fusion = "eager";
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("torchao's eager Float8"));
  st.kernel_fusion = "compiled";
  st.fp8_recipe = "delayed";
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("is not torchao's"));
  st.fp8_recipe = "tensorwise";
  CHECK(config::resolve_run(m, st).parallel.fp8_recipe == strategy::Fp8Recipe::Tensorwise);
  st.fp8_recipe.reset();  // torchao's recipe is the default under compiled blocks
  CHECK(config::resolve_run(m, st).parallel.fp8_recipe == strategy::Fp8Recipe::Tensorwise);
  // The float8 all-gather is FSDP2's under torchao; Megatron-style ZeRO-3 has none.
  st.fp8_param_gather = true;
  CHECK(config::resolve_run(m, st).parallel.fp8_param_gather);
  st.fsdp.reset();
  st.zero = 3;
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("torchao's float8 all-gather under FSDP2"));
}

TEST_CASE("torchao's row-wise Float8 casts each operand both ways and rescales the gradient GEMMs",
          "[workload][float8]") {
  // float8_linear.py (matmul_with_hp_or_float8_args) with axiswise scaling:
  // the input cast along its rows for the forward and along its columns for
  // the weight gradient, the output gradient along both for the two
  // gradient GEMMs, each an amax pass (read 2) and a cast (read 2, write 1)
  // from bf16: 10 bytes an element where per-tensor scaling reads once.
  const auto m = test::shipped_model("llama3-8b");
  const auto ops = workload::transformer_layer_ops(m, float8_shape(false, strategy::Fp8Recipe::Rowwise), 0);
  // wk's and w3's inputs are wq's and w1's, cast once.
  check_kernels(sum(ops.forward, ".fp8_cast"), 4, 10 * N * (h + q + h + f));
  check_kernels(sum(ops.backward, ".grad_fp8_cast"), 7, 10 * N * (q + 2 * kv + h + 2 * f + h));
  // The weight cast in the forward (5 bytes a weight) is not kept: the
  // backward casts the bf16 weight again the other way.
  const Sum weight = sum(ops.forward, ".fp8_weight_cast");
  check_kernels(weight, 7, 5 * kWeights);
  CHECK(weight.saved == 0);
  check_kernels(sum(ops.backward, ".fp8_weight_cast_for_dgrad"), 7, 5 * kWeights);
  CHECK(sum(ops.backward, ".fp8_weight_transpose").kernels == 0);
  // cuBLAS's per-tensor GEMM for the gradients, then the scales multiplied
  // in: read and write 2 bytes of each output element. The input
  // gradients are each linear's input (wq, wk, wv, w1 and w3 take h, wo q,
  // w2 f); the weight gradients are the weights.
  check_kernels(sum(ops.backward, ".dgrad.fp8_rescale"), 7, 4 * N * (5 * h + q + f));
  check_kernels(sum(ops.backward, ".wgrad.fp8_rescale"), 7, 4 * kWeights);
  // Per-tensor scaling rescales nothing.
  CHECK(sum(workload::transformer_layer_ops(m, float8_shape(false), 0).backward, ".fp8_rescale").kernels == 0);
}

TEST_CASE("torchao's row-wise Float8 is refused where ptsim does not model it", "[config][float8]") {
  const auto m = test::shipped_model("llama3-8b");
  auto st = torchtitan_float8(8);
  st.fp8_recipe = "rowwise";
  CHECK(config::resolve_run(m, st).parallel.fp8_recipe == strategy::Fp8Recipe::Rowwise);
  // FSDP2's float8 all-gather is tensorwise only in torchao.
  st.fp8_param_gather = true;
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("tensorwise scaling only"));
  st.fp8_param_gather.reset();
  // Its casts of sequence-parallel shards under TP are not modelled.
  st.tp = 2;
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("tensor parallelism"));
  st.tp.reset();
  // Transformer Engine has no row-wise recipe.
  st.kernel_fusion = "fused";
  st.fsdp.reset();
  st.recompute = "none";
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("torchao's Float8 recipe"));
}

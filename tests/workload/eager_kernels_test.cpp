// --kernel-fusion eager: PyTorch eager's memory-bound kernels as torchtitan's
// Llama code ran them (December 2024), against hand counts of autograd's
// reads and writes (workload/internal/eager_ops.hpp gives the sources).
#include <string>
#include <utility>
#include <vector>

#include "ptsim/workload/boundary_ops.hpp"
#include "ptsim/workload/layer_ops.hpp"
#include "ptsim/workload/step_workload.hpp"
#include "test_support.hpp"
#include "workload/op_totals.hpp"

using namespace ptsim;

namespace {

using Sum = test::OpTotals;

Sum sum(const std::vector<workload::OpSpec>& ops, const std::string& prefix) {
  return test::memory_op_totals(ops, [&](const std::string& name) { return name.rfind(prefix, 0) == 0; });
}

// Llama 3 8B: h 4096, 32 query heads and 8 key/value groups of 128, FFN
// 14336; one micro-batch of 2 × 8192 tokens on one GPU.
workload::MicroShape llama_shape(bool eager, bool compiled = false) {
  workload::MicroShape s;
  s.micro_batch = 2;
  s.seq_length = 8192;
  s.kernel_fusion = compiled ? strategy::KernelFusion::Compiled
                    : eager  ? strategy::KernelFusion::Eager
                             : strategy::KernelFusion::Fused;
  return s;
}
constexpr double N = 2 * 8192, h = 4096, q = 4096, kv = 1024, f = 14336;

// A Llama 3 8B of `layers` layers on one GPU, one sequence of 1024 tokens,
// eager kernels under `recompute`.
std::pair<model::ModelSpec, config::StrategyInput> eager_llama(std::int64_t layers, const char* recompute,
                                                               const char* fusion = "eager") {
  auto m = test::shipped_model("llama3-8b");
  m.num_layers = layers;
  config::StrategyInput st;
  st.gpus = 1;
  st.global_batch_size = 1;
  st.micro_batch_size = 1;
  st.seq_length = 1024;
  st.kernel_fusion = fusion;
  st.recompute = recompute;
  return {m, st};
}

}  // namespace

TEST_CASE("Eager RMSNorm: 36 bytes an element in eight kernels forward, 92 in thirteen backward", "[workload][eager]") {
  const auto m = test::shipped_model("llama3-8b");
  const auto ops = workload::transformer_layer_ops(m, llama_shape(true), 0);
  const Sum fw = sum(ops.forward, "ln1"), bw = sum(ops.backward, "ln1");
  // Per element: float 2+4, pow 4+4, mean 4, mul 4+4, type_as 4+2, weight
  // 2+2; per row: mean's output 4, + eps 4+4, rsqrt 4+4, mul's read 4.
  CHECK(fw.bytes == Approx(36 * N * h + 24 * N));
  CHECK(fw.kernels == 8);
  CHECK(bw.bytes == Approx(92 * N * h));
  CHECK(bw.kernels == 13);
  // Kept: the fp32 copy and the bf16 normalized value, and each row's rsqrt.
  CHECK(fw.saved == Approx(6 * N * h + 4 * N));
  CHECK(bw.freed == fw.saved);
  // Fused (Transformer Engine's RMSNorm): one kernel each way, 4 and 8 bytes.
  const auto fused = workload::transformer_layer_ops(m, llama_shape(false), 0);
  CHECK(sum(fused.forward, "ln1").bytes == Approx(4 * N * h));
  CHECK(sum(fused.backward, "ln1").bytes == Approx(8 * N * h));
}

TEST_CASE("Eager RoPE goes through complex64: 20 bytes an element each way, GQA expanded to every head",
          "[workload][eager]") {
  const auto m = test::shipped_model("llama3-8b");
  const auto ops = workload::transformer_layer_ops(m, llama_shape(true), 0);
  // q and k each: cast to fp32 2+4, complex product 4+4, cast back 4+2.
  CHECK(sum(ops.forward, "attn.rope").bytes == Approx(20 * N * (q + kv)));
  CHECK(sum(ops.forward, "attn.rope").kernels == 6);
  CHECK(sum(ops.backward, "attn.rope").bytes == Approx(20 * N * (q + kv)));
  // repeat_kv: k and v copied from 8 groups to 32 heads (read 2·kv, write
  // 2·q bytes a token each), summed back in backward.
  CHECK(sum(ops.forward, "attn.repeat_kv").bytes == Approx(2 * N * (2 * kv + 2 * q)));
  CHECK(sum(ops.backward, "attn.repeat_kv").bytes == Approx(2 * N * (2 * q + 2 * kv)));
  // Attention then keeps full multi-head Q, K and V and the row statistics.
  for (const auto& op : ops.forward)
    if (op.name == "attn.flash") CHECK(static_cast<double>(op.saved_bytes) == Approx(2 * N * 3 * q + 4 * 32 * N));
}

TEST_CASE("Eager SwiGLU: SiLU and the gate product apart, keeping three hidden-wide tensors", "[workload][eager]") {
  const auto m = test::shipped_model("llama3-8b");
  const auto ops = workload::transformer_layer_ops(m, llama_shape(true), 0);
  // silu 2+2 and product 4+2 forward; two product gradients 4+2 each and
  // silu's backward 4+2; kept: silu's input and both factors, 2 bytes each.
  const Sum fw = sum(ops.forward, "mlp.silu"), gate = sum(ops.forward, "mlp.gate_mul");
  CHECK(fw.bytes + gate.bytes == Approx(10 * N * f));
  CHECK(fw.saved + gate.saved == Approx(6 * N * f));
  const Sum bw = sum(ops.backward, "mlp.gate_mul"), silu_bw = sum(ops.backward, "mlp.silu");
  CHECK(bw.bytes + silu_bw.bytes == Approx(18 * N * f));
  CHECK(bw.freed + silu_bw.freed == Approx(6 * N * f));
  // The input gradients of the three attention and two MLP linears that
  // share an input are summed: three adds of 4+2 bytes an element.
  CHECK(sum(ops.backward, "attn.input_grad").bytes + sum(ops.backward, "mlp.input_grad").bytes ==
        Approx(3 * 6 * N * h));
}

TEST_CASE("Eager cross-entropy over fp32 logits moves 36 bytes a logit, Megatron's unfused 52", "[workload][eager]") {
  const auto m = test::shipped_model("llama3-8b");
  const double V = 128256;
  const auto eager = workload::output_ops(m, llama_shape(true));
  // cast 2+4, log_softmax 4+4; zero-fill 4, log_softmax backward 8+4, cast
  // back 4+2 (nll and its scatter: a few bytes a row).
  CHECK(sum(eager.forward, "cross_entropy").bytes + sum(eager.backward, "cross_entropy").bytes ==
        Approx(36 * N * V + 2 * 16 * N));
  CHECK(sum(eager.forward, "cross_entropy").saved == Approx(4 * N * V));
}

TEST_CASE("torchtitan's op checkpointing keeps the input, every other GEMM's output and attention's, a layer",
          "[workload][eager][memory]") {
  // parallelize_llama.py's policy at 9dec370: of the seven aten.mm of a
  // Llama layer (wq, wk, wv, wo, w1, w3, w2) the odd-numbered ones' outputs
  // are kept, with the flash-attention kernel's O and fp32 log-sum-exp and
  // the checkpointed layer input; the rest reruns. Measured as the growth
  // of the activation peak with one more layer.
  const auto peak = [](std::int64_t layers, const char* recompute) {
    const auto [m, st] = eager_llama(layers, recompute);
    return static_cast<double>(
        test::simulate(m, test::shipped_hardware("h100-sxm5-80gb"), st).result.memory.activations_peak_bytes);
  };
  const double n = 1024, lse = 4 * 32 * n;
  const double kept = 2 * n * h + 2 * n * q + 2 * n * kv + (2 * n * q + lse) + 2 * n * f + 2 * n * h;
  CHECK(peak(5, "op") - peak(4, "op") == Approx(kept));
  // Full checkpointing keeps the bf16 layer input alone (not the eager
  // norm's fp32 copy).
  CHECK(peak(5, "full") - peak(4, "full") == Approx(2 * n * h));
}

TEST_CASE("torchtitan's op checkpointing reruns wk, wo and w3 and no attention", "[workload][eager]") {
  const auto [m, st] = eager_llama(2, "op");
  const auto run = config::resolve_run(m, st);
  const auto step = workload::build_step_workload(run.model, run.parallel);
  // The recomputed FLOPs: the even-numbered GEMMs, 2·N·(h·kv + q·h + h·f) a layer.
  const double n = 1024;
  CHECK(step.hardware_flops - step.model_flops == Approx(2 * 2 * n * (h * kv + q * h + h * f)));
}

TEST_CASE("Compiled blocks keep torchtitan's linears and copies and fuse each memory-bound chain into one kernel",
          "[workload][eager]") {
  const auto m = test::shipped_model("llama3-8b");
  const auto ops = workload::transformer_layer_ops(m, llama_shape(true, true), 0);
  // RMSNorm: one kernel each way, read 2 write 2 forward, 8 backward.
  CHECK(sum(ops.forward, "ln1").kernels == 1);
  CHECK(sum(ops.forward, "ln1").bytes == Approx(4 * N * h));
  CHECK(sum(ops.backward, "ln1").bytes == Approx(8 * N * h));
  // RoPE: one pass over q and k each way, bf16 in and out.
  CHECK(sum(ops.forward, "attn.rope").bytes == Approx(4 * N * (q + kv)));
  CHECK(sum(ops.backward, "attn.rope").bytes == Approx(4 * N * (q + kv)));
  // repeat_kv's copies stay: attention is still handed every head's K and V.
  CHECK(sum(ops.forward, "attn.repeat_kv").bytes == Approx(2 * N * (2 * kv + 2 * q)));
  CHECK(sum(ops.backward, "attn.repeat_kv").bytes == Approx(2 * N * (2 * q + 2 * kv)));
  // SwiGLU in one kernel: read w1's and w3's outputs, write the product,
  // keeping both factors; backward reads the gradient and both, writes two.
  CHECK(sum(ops.forward, "mlp.swiglu").bytes == Approx(6 * N * f));
  CHECK(sum(ops.forward, "mlp.swiglu").saved == Approx(4 * N * f));
  CHECK(sum(ops.backward, "mlp.swiglu").bytes == Approx(10 * N * f));
  // The three attention input gradients summed in one kernel (read 3 × 2,
  // write 2), the MLP's two in one add (4 + 2).
  CHECK(sum(ops.backward, "attn.input_grad").kernels == 1);
  CHECK(sum(ops.backward, "attn.input_grad").bytes == Approx(8 * N * h));
  CHECK(sum(ops.backward, "mlp.input_grad").bytes == Approx(6 * N * h));
  // torchtitan's seven linears, as in eager.
  int linears = 0;
  for (const auto& op : ops.forward)
    if (op.kind == workload::OpKind::Matmul) ++linears;
  CHECK(linears == 7);
  // Outside the compiled blocks the final norm and the loss stay eager.
  const auto out = workload::output_ops(m, llama_shape(true, true));
  CHECK(sum(out.forward, "final_norm").kernels == 8);
  CHECK(sum(out.forward, "cross_entropy").bytes ==
        Approx(sum(workload::output_ops(m, llama_shape(true)).forward, "cross_entropy").bytes));
}

TEST_CASE("torchtitan's op checkpointing runs over compiled blocks, rerunning the fused kernels", "[workload][eager]") {
  const auto [m, st] = eager_llama(2, "op", "compiled");
  const auto run = config::resolve_run(m, st);
  REQUIRE(run.parallel.kernel_fusion == strategy::KernelFusion::Compiled);
  const auto step = workload::build_step_workload(run.model, run.parallel);
  // The same GEMMs rerun as under eager kernels: wk, wo and w3.
  const double n = 1024;
  CHECK(step.hardware_flops - step.model_flops == Approx(2 * 2 * n * (h * kv + q * h + h * f)));
}

// The op lists of one transformer layer and of the embedding and output
// blocks: the order constraints and the extra kernels they carry.
#include "ptsim/config/resolve_run.hpp"
#include "ptsim/workload/boundary_ops.hpp"
#include "ptsim/workload/layer_ops.hpp"
#include "ptsim/workload/stage_parameters.hpp"
#include "ptsim/workload/step_workload.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace ptsim;

namespace {

// "attn.ring.kv_send.step2" -> "attn.ring.kv_recv.step1": the block a ring
// step forwards is the one it received the step before.
std::string previous_receive(const std::string& send) {
  const auto at = send.find("kv_send.step");
  const int step = std::stoi(send.substr(at + 12));
  return send.substr(0, at) + "kv_recv.step" + std::to_string(step - 1);
}

void check_ring_sends(const std::vector<workload::OpSpec>& ops, int expected_forwarding_sends) {
  int forwarding = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    INFO(i << " " << op.name << " after " << op.after);
    if (op.after >= 0) REQUIRE(static_cast<std::size_t>(op.after) < i);  // waits for an earlier op
    if (op.name.find("kv_send.step") == std::string::npos || op.name.find("kv_send.step0") != std::string::npos)
      continue;
    REQUIRE(op.after >= 0);
    CHECK(ops[static_cast<std::size_t>(op.after)].name == previous_receive(op.name));
    ++forwarding;
  }
  CHECK(forwarding == expected_forwarding_sends);
}

// One sequence of 4096 tokens at TP 4 (experts too) in FP8 under `recipe`,
// with or without SP.
workload::MicroShape fp8_tp4(bool sp, strategy::Fp8Recipe recipe, bool any_layout = false) {
  workload::MicroShape s;
  s.seq_length = 4096;
  s.tp = 4;
  s.expert_tp = 4;
  s.sequence_parallel = sp;
  strategy::ParallelConfig c;
  c.precision = Dtype::Fp8;
  c.fp8_recipe = recipe;
  s.gemm_dtype = c.gemm_dtype();
  s.quantization = strategy::quantization_of(c.precision, c.fp8_recipe, any_layout);
  return s;
}
// One sequence of 4096 tokens at TP 4 under NVFP4, with or without SP.
workload::MicroShape nvfp4_tp4(bool sp) {
  workload::MicroShape s = fp8_tp4(sp, strategy::Fp8Recipe::Delayed);
  s.gemm_dtype = Dtype::Nvfp4;
  s.quantization = strategy::quantization_of(Dtype::Nvfp4, strategy::Fp8Recipe::Delayed);
  return s;
}
// The per-tensor recipe `current` names.
workload::MicroShape fp8_tp4(bool sp, bool current) {
  return fp8_tp4(sp, current ? strategy::Fp8Recipe::Tensorwise : strategy::Fp8Recipe::Delayed);
}

}  // namespace

TEST_CASE("Ring attention forwards the key/value block it received, forward and backward", "[workload]") {
  // Llama 3 8B (RoPE, GQA, SwiGLU): ops before the ring in both passes, so an
  // index counted from the ring's own first op would point elsewhere.
  const auto m = test::shipped_model("llama3-8b");
  workload::MicroShape s;
  s.seq_length = m.seq_length;
  s.tp = 2;
  s.sequence_parallel = true;
  for (const std::int64_t cp : {2, 4, 8}) {
    INFO("cp " << cp);
    s.cp = cp;
    const auto ops = workload::transformer_layer_ops(m, s, 0);
    // cp steps, cp - 1 sends; all but the first forward a received block.
    check_ring_sends(ops.forward, static_cast<int>(cp) - 2);
    check_ring_sends(ops.backward, static_cast<int>(cp) - 2);
  }
}

TEST_CASE("Without gradient-accumulation fusion each weight gradient is added into the main gradient",
          "[workload]") {
  // GPT-3 175B's layer on TP 8: QKV 3h², projection h², FC1 and FC2 4h² each,
  // all split 8 ways: 12h²/8 weights. The hook reads the bf16 gradient (2
  // bytes) and the main gradient and writes it back (2 × 4 bytes in fp32, 2 × 2 in bf16).
  const auto m = test::shipped_model("gpt3-175b");
  const double h = 12288, t = 8, V = 51200, s_len = 2048;
  workload::MicroShape s;
  s.seq_length = m.seq_length;
  s.tp = 8;
  const auto accumulated = [](const std::vector<workload::OpSpec>& ops) {
    double bytes = 0;
    int count = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].name.find(".accumulate") == std::string::npos) continue;
      CHECK(ops[i].weight_grad);
      if (ops[i].name != "embedding.wgrad.accumulate") {
        REQUIRE(i > 0);  // right after the GEMM whose gradient it adds
        CHECK(ops[i - 1].name + ".accumulate" == ops[i].name);
        CHECK(ops[i - 1].kind == workload::OpKind::Matmul);
      }
      bytes += static_cast<double>(ops[i].bytes);
      ++count;
    }
    return std::pair{bytes, count};
  };
  CHECK(accumulated(workload::transformer_layer_ops(m, s, 0).backward).second == 0);  // fused by default

  s.gradient_accumulation_fusion = false;
  for (const int main_grad_bytes : {4, 2}) {
    INFO("main gradient of " << main_grad_bytes << " bytes");
    s.main_grad_bytes = main_grad_bytes;
    const double per_weight = 2.0 + 2.0 * main_grad_bytes;
    const auto layer = accumulated(workload::transformer_layer_ops(m, s, 0).backward);
    CHECK(layer.second == 4);
    CHECK(layer.first == Approx(12 * h * h / t * per_weight).epsilon(1e-9));
    const auto output = accumulated(workload::output_ops(m, s).backward);
    CHECK(output.second == 1);
    CHECK(output.first == Approx(V / t * h * per_weight).epsilon(1e-9));
    const auto embedding = accumulated(workload::embedding_ops(m, s).backward);
    CHECK(embedding.second == 1);
    CHECK(embedding.first == Approx((V / t * h + s_len * h) * per_weight).epsilon(1e-9));
  }
}

TEST_CASE("The accumulation after a weight gradient waits for the TP all-reduce beside it", "[workload]") {
  // Megatron's linear waits for its input-gradient reduction before autograd
  // runs the accumulation hook: the all-reduce's consumer (the kernel after
  // next) must be the accumulation, and `after` indices must survive insertion.
  const auto m = test::shipped_model("llama3-8b");
  workload::MicroShape s;
  s.seq_length = m.seq_length;
  s.tp = 2;
  s.cp = 2;
  s.sequence_parallel = true;
  s.gradient_accumulation_fusion = false;
  const auto ops = workload::transformer_layer_ops(m, s, 0).backward;
  check_ring_sends(ops, 0);
  int async_reductions = 0;
  for (std::size_t i = 0; i + 2 < ops.size(); ++i) {
    if (!ops[i].async || ops[i].kind != workload::OpKind::Collective) continue;
    if (ops[i].name.find("dgrad") == std::string::npos) continue;
    ++async_reductions;
    CHECK(ops[i + 1].name.find(".wgrad") != std::string::npos);
    CHECK(ops[i + 2].name == ops[i + 1].name + ".accumulate");
  }
  CHECK(async_reductions == 2);  // QKV and FC1 input gradients (SP reduce-scatters)
}

TEST_CASE("Every biased linear reduces its bias gradient over the tokens in a kernel of its own", "[workload]") {
  // GPT-3 175B on TP 8, micro-batch 2 (N = 4096 tokens per rank): QKV and FC1
  // are column-parallel, their bias gradients the output gradient of 3h/8 and
  // 4h/8 columns summed over N tokens; the projection and FC2 biases are added
  // after the reduction, on the SP shard under SP (N/8 tokens), h columns.
  const auto m = test::shipped_model("gpt3-175b");
  REQUIRE(m.add_bias_linear);
  const double h = 12288, t = 8, N = 2 * 2048;
  for (const bool sp : {false, true}) {
    INFO("sequence parallel " << sp);
    workload::MicroShape s;
    s.seq_length = m.seq_length;
    s.micro_batch = 2;
    s.tp = 8;
    s.sequence_parallel = sp;
    const double Nsp = sp ? N / t : N;
    const auto ops = workload::transformer_layer_ops(m, s, 0);
    std::map<std::string, double> bytes;
    for (const auto& op : ops.backward)
      if (op.name.find(".bias_grad") != std::string::npos) {
        CHECK(op.kind == workload::OpKind::MemoryBound);
        bytes[op.name] = static_cast<double>(op.bytes);
      }
    REQUIRE(bytes.size() == 4);
    CHECK(bytes.at("attn.qkv.bias_grad") == Approx(2 * N * 3 * h / t + 2 * 3 * h / t));
    CHECK(bytes.at("attn.proj.bias_grad") == Approx(2 * Nsp * h + 2 * h));
    CHECK(bytes.at("mlp.fc1.bias_grad") == Approx(2 * N * 4 * h / t + 2 * 4 * h / t));
    CHECK(bytes.at("mlp.fc2.bias_grad") == Approx(2 * Nsp * h + 2 * h));
  }
  // Llama's linears carry no bias: nothing to reduce.
  const auto llama = test::shipped_model("llama3-8b");
  REQUIRE_FALSE(llama.add_bias_linear);
  workload::MicroShape s;
  s.seq_length = llama.seq_length;
  s.tp = 2;
  for (const auto& op : workload::transformer_layer_ops(llama, s, 0).backward)
    CHECK(op.name.find("bias_grad") == std::string::npos);
}

TEST_CASE("Selective recomputation of unfused attention reruns the whole core attention, context GEMM included",
          "[workload]") {
  // Megatron-LM checkpoints its CoreAttention module: scores, softmax,
  // dropout and the context GEMM are rerun; V stays saved as its input.
  const auto m = test::shipped_model("gpt3-175b");
  workload::MicroShape s;
  s.seq_length = m.seq_length;
  s.tp = 8;
  s.attention = strategy::AttentionBackend::Unfused;
  std::vector<std::string> core;
  for (const auto& op : workload::transformer_layer_ops(m, s, 0).forward)
    if (op.rerun_by & strategy::kRecomputeCoreAttn) {
      core.push_back(op.name);
      if (op.name == "attn.context") CHECK(op.kept_bytes(strategy::kRecomputeCoreAttn) == op.saved_bytes);
    }
  CHECK(core == std::vector<std::string>{"attn.scores", "attn.softmax", "attn.dropout", "attn.context"});
}

TEST_CASE("Selective recomputation of fused attention reruns the attention kernel, keeping Q, K and V",
          "[workload]") {
  // Megatron-Core checkpoints core attention whatever its backend: the fused
  // kernel is the one op rerun; it keeps the checkpoint's inputs (Q, K, V in
  // bf16: 2·N·(q + 2·kv) bytes with GQA) and drops the fp32 softmax statistics.
  // With RoPE the query and key are new tensors but the value is a view of
  // the QKV projection's output, which the checkpoint then pins whole: the
  // pre-RoPE query and key, 2·N·(q + kv) more, until attention's backward
  // (memory-oracle finding A7: 1.5 × Q + K + V + O on Llama 70B, TP 8).
  const auto m = test::shipped_model("llama3-8b");  // 32 heads, 8 KV groups, head dim 128
  workload::MicroShape s;
  s.seq_length = 8192;
  s.tp = 2;
  const double N = 8192, q = 32 * 128 / 2.0, kv = 8 * 128 / 2.0, lse = 4 * (32 / 2.0) * 8192;
  const double qkv = 2 * N * (q + 2 * kv), pinned = 2 * N * (q + kv);
  const auto ops = workload::transformer_layer_ops(m, s, 0);
  std::vector<std::string> core;
  for (const auto& op : ops.forward)
    if (op.rerun_by & strategy::kRecomputeCoreAttn) {
      core.push_back(op.name);
      CHECK(static_cast<double>(op.saved_bytes) == Approx(qkv + lse));
      CHECK(static_cast<double>(op.kept_bytes(strategy::kRecomputeCoreAttn)) == Approx(qkv + pinned));
      CHECK(static_cast<double>(op.dropped_bytes(strategy::kRecomputeCoreAttn)) == Approx(lse));
      CHECK(op.kept_bytes(strategy::kRecomputeMlp) == op.saved_bytes);  // no core_attn checkpoint: nothing pinned
    }
  CHECK(core == std::vector<std::string>{"attn.flash"});
  for (const auto& op : ops.backward)
    if (op.name == "attn.flash.bwd") {
      CHECK(static_cast<double>(op.released_bytes(strategy::kRecomputeCoreAttn)) == Approx(qkv + lse + pinned));
      CHECK(static_cast<double>(op.released_bytes(0)) == Approx(qkv + lse));
    }
}

TEST_CASE("Without RoPE the attention checkpoint's Q, K and V are views of one buffer: nothing more is pinned",
          "[workload]") {
  // GPT-3 (learned positions): query, key and value all stay views of the
  // QKV projection's output, which is exactly Q + K + V.
  const auto m = test::shipped_model("gpt3-175b");
  workload::MicroShape s;
  s.seq_length = m.seq_length;
  s.tp = 8;
  for (const auto& op : workload::transformer_layer_ops(m, s, 0).forward)
    if (op.name == "attn.flash") {
      CHECK(op.holds.empty());
      CHECK(op.kept_bytes(strategy::kRecomputeCoreAttn) ==
            op.saved_bytes - op.dropped_bytes(strategy::kRecomputeCoreAttn));
    }
}

TEST_CASE("Under context parallelism selective recomputation reruns the whole ring, its transfers included",
          "[workload]") {
  // attention.py's checkpoint_core_attention has no CP condition: every
  // step of the ring (attention kernels and KV transfers) runs again, and
  // the last keeps Q, K and V (plus the pinned pre-RoPE Q and K) but not
  // the merged statistics.
  const auto m = test::shipped_model("llama3-8b");
  workload::MicroShape s;
  s.seq_length = 8192;
  s.tp = 2;
  s.cp = 4;
  const double N = 8192 / 4.0, q = 32 * 128 / 2.0, kv = 8 * 128 / 2.0;
  const double qkv = 2 * N * (q + 2 * kv), pinned = 2 * N * (q + kv);
  int kernels = 0, sends = 0, recvs = 0;
  double kept = 0, saved = 0;
  for (const auto& op : workload::transformer_layer_ops(m, s, 0).forward) {
    if (!(op.rerun_by & strategy::kRecomputeCoreAttn)) continue;
    if (op.kind == workload::OpKind::Send)
      ++sends;
    else if (op.kind == workload::OpKind::Recv)
      ++recvs;
    else if (op.name.rfind("attn.ring", 0) == 0)
      ++kernels;
    kept += static_cast<double>(op.kept_bytes(strategy::kRecomputeCoreAttn));
    saved += static_cast<double>(op.saved_bytes);
  }
  CHECK(sends == 3);
  CHECK(recvs == 3);
  CHECK(kernels == 4 + 1);  // one attention kernel a ring step, and the merge
  CHECK(kept == Approx(qkv + pinned));
  CHECK(saved == Approx(qkv + 4 * (32 / 2.0) * N));  // with the fp32 softmax statistics
}

TEST_CASE("The fused cross-entropy reads the bf16 logits twice and rewrites them once each way", "[workload]") {
  // Transformer Engine's parallel cross-entropy on Llama 3 8B's 128,256-entry
  // vocabulary split over TP 2, one sequence of 8192 tokens: E = N·V/t logits.
  // Forward: read (2 bytes each), then read and write the gradient in place
  // (2 + 2), kept; backward: scale in place (2 + 2): 10 bytes per logit in all,
  // where Megatron's unfused kernels over fp32 logits move 52.
  const auto m = test::shipped_model("llama3-8b");
  workload::MicroShape s;
  s.seq_length = 8192;
  s.tp = 2;
  const double N = 8192, E = N * 128256 / 2.0;
  const auto bytes_of = [](const std::vector<workload::OpSpec>& ops, const std::string& prefix) {
    double b = 0;
    for (const auto& op : ops)
      if (op.name.rfind(prefix, 0) == 0 && op.kind == workload::OpKind::MemoryBound) b += static_cast<double>(op.bytes);
    return b;
  };
  const auto unfused = workload::output_ops(m, s);
  CHECK(bytes_of(unfused.forward, "cross_entropy") + bytes_of(unfused.backward, "cross_entropy") == Approx(52 * E));
  s.loss_kernel = strategy::LossKernel::TransformerEngine;
  const auto fused = workload::output_ops(m, s);
  CHECK(bytes_of(fused.forward, "cross_entropy") == Approx(6 * E));
  CHECK(bytes_of(fused.backward, "cross_entropy") == Approx(4 * E));
  bool gathered = false;
  for (const auto& op : fused.forward) {
    CHECK(op.name.find("cross_entropy.cast") == std::string::npos);
    if (op.name == "cross_entropy.fused") CHECK(static_cast<double>(op.saved_bytes) == Approx(2 * E));
    if (op.name == "cross_entropy.fused.stats_allgather") {
      gathered = true;
      CHECK(static_cast<double>(op.bytes) == Approx(3 * 4 * N * 2));  // 3 fp32 a row from each of 2 ranks
    }
  }
  CHECK(gathered);
  for (const auto& op : fused.backward)
    if (op.name == "cross_entropy.fused.bwd") CHECK(static_cast<double>(op.freed_bytes) == Approx(2 * E));
}

TEST_CASE(
    "flash-attn's fused cross-entropy reads the bf16 logits twice forward and once backward and over TP gathers its "
    "statistics",
    "[workload]") {
  // MPT-7B's 50,368-entry vocabulary on one rank (llm-foundry's runs are
  // TP 1), one sequence of 2048 tokens: E = N·V logits. flash-attn 1.0.9's
  // xentropy kernel reads each row for its max and again for its sum of
  // exponentials (2 + 2 bytes a logit), keeping the bf16 logits (2); its
  // backward reads them and writes the bf16 gradient (2 + 2): 8 bytes a logit
  // in all where Megatron's unfused kernels move 52.
  model::ModelSpec m = test::shipped_model("llama3-8b");
  m.vocab_size = 50368;
  workload::MicroShape s;
  s.seq_length = 2048;
  s.loss_kernel = strategy::LossKernel::FlashAttn;
  const double E = 2048.0 * 50368;
  const auto ops = workload::output_ops(m, s);
  double forward = 0, backward = 0, saved = 0, freed = 0;
  for (const auto& op : ops.forward)
    if (op.name.rfind("cross_entropy", 0) == 0) {
      forward += static_cast<double>(op.bytes);
      saved += static_cast<double>(op.saved_bytes);
    }
  for (const auto& op : ops.backward)
    if (op.name.rfind("cross_entropy", 0) == 0) {
      backward += static_cast<double>(op.bytes);
      freed += static_cast<double>(op.freed_bytes);
    }
  CHECK(forward == Approx(4 * E));
  CHECK(backward == Approx(4 * E));
  CHECK(saved == Approx(2 * E));
  CHECK(freed == Approx(2 * E));
  // Over TP 2 (flash-attn's process_group): each rank reads its half of the
  // vocabulary, all-gathers one fp32 log-sum-exp a row from each rank and
  // all-reduces one fp32 loss a row.
  s.tp = 2;
  const auto split = workload::output_ops(m, s);
  double split_bytes = 0, gathered = 0, reduced = 0;
  for (const auto& op : split.forward) {
    if (op.name == "cross_entropy.flash_attn") split_bytes = static_cast<double>(op.bytes);
    if (op.name == "cross_entropy.flash_attn.lse_allgather") gathered = static_cast<double>(op.bytes);
    if (op.name == "cross_entropy.flash_attn.loss_allreduce") reduced = static_cast<double>(op.bytes);
  }
  CHECK(split_bytes == Approx(4 * E / 2));
  CHECK(gathered == Approx(4 * 2048.0 * 2));
  CHECK(reduced == Approx(4 * 2048.0));
}

TEST_CASE("Final logit soft-capping is one pass over the bf16 logits each way, its tanh kept", "[workload]") {
  // Gemma 2 2B: 256,000 logits a token over TP 2, one sequence of 8192
  // tokens, E = N·V/t. Forward: read and write each logit (2 + 2 bytes),
  // keeping the tanh (2); backward: read the gradient and the tanh, write the
  // gradient (2 + 2 + 2), after the loss's backward and before the LM head's.
  const auto m = test::shipped_model("gemma2-2b-it");
  workload::MicroShape s;
  s.seq_length = 8192;
  s.tp = 2;
  const double E = 8192 * 256000 / 2.0;
  const auto ops = workload::output_ops(m, s);
  const auto position = [](const std::vector<workload::OpSpec>& list, const std::string& name) {
    for (std::size_t i = 0; i < list.size(); ++i)
      if (list[i].name == name) return static_cast<int>(i);
    return -1;
  };
  const int fw = position(ops.forward, "lm_head.softcap");
  REQUIRE(fw >= 0);
  const auto& cap = ops.forward[static_cast<std::size_t>(fw)];
  CHECK(static_cast<double>(cap.bytes) == Approx(4 * E));
  CHECK(static_cast<double>(cap.saved_bytes) == Approx(2 * E));
  CHECK(fw == position(ops.forward, "lm_head") + 1);
  const int bw = position(ops.backward, "lm_head.softcap.bwd");
  REQUIRE(bw >= 0);
  CHECK(static_cast<double>(ops.backward[static_cast<std::size_t>(bw)].bytes) == Approx(6 * E));
  CHECK(static_cast<double>(ops.backward[static_cast<std::size_t>(bw)].freed_bytes) == Approx(2 * E));
  CHECK(bw > position(ops.backward, "cross_entropy.bwd.cast"));
  CHECK(bw < position(ops.backward, "lm_head.dgrad"));
  // Llama 3 8B has no cap: no such pass.
  CHECK(position(workload::output_ops(test::shipped_model("llama3-8b"), s).forward, "lm_head.softcap") == -1);
}

TEST_CASE("FP8 casts, gathers and amax passes follow Transformer Engine's two per-tensor recipes", "[workload][fp8]") {
  // Llama 3 8B (h 4096, 32 query and 8 key/value heads of 128: QKV width
  // 6144; SwiGLU FC1 width 2·14336; no biases), one sequence of 4096 tokens,
  // TP 4. Bytes per op by hand, N = 4096 tokens, Nsp = N/4 under SP.
  const auto m = test::shipped_model("llama3-8b");
  const double h = 4096, t = 4, N = 4096, qkv = 6144, proj_in = 4096, fc1 = 2 * 14336, ffn = 14336;
  for (const bool sp : {false, true})
    for (const bool current : {false, true}) {
      INFO("sequence parallel " << sp << ", current scaling " << current);
      const workload::MicroShape s = fp8_tp4(sp, current);
      const double Nsp = sp ? N / t : N;
      const double cast = current ? 6 : 4;  // (amax read 2 +) read 2, write 1 + 1
      const auto ops = workload::transformer_layer_ops(m, s, 0);
      std::map<std::string, double> fw, bw;
      for (const auto& op : ops.forward) fw[op.name] += static_cast<double>(op.bytes);
      for (const auto& op : ops.backward) bw[op.name] += static_cast<double>(op.bytes);

      // The norms fused into QKV and FC1 write fp8 under delayed scaling.
      CHECK(fw.at("ln1") == Approx(Nsp * h * (current ? 4 : 3)));
      CHECK(fw.at("ln2") == Approx(Nsp * h * (current ? 4 : 3)));
      // Inputs that arrive from another kernel: cast with transpose.
      CHECK(fw.at("attn.proj.fp8_cast") == Approx(N * proj_in / t * cast));
      CHECK(fw.at("mlp.fc2.fp8_cast") == Approx(N * ffn / t * cast));
      CHECK(bw.at("attn.qkv.grad_fp8_cast") == Approx(N * qkv / t * cast));
      CHECK(bw.at("mlp.fc1.grad_fp8_cast") == Approx(N * fc1 / t * cast));
      if (!sp) {
        // The norm-fused input: only its transpose (delayed), or the whole
        // quantize from the norm's bf16 output and amax (current).
        const std::string qkv_input = current ? "attn.qkv.fp8_cast" : "attn.qkv.fp8_transpose";
        CHECK(fw.at(qkv_input) == Approx(N * h * (current ? 4 : 2)));
        CHECK(fw.count("attn.input.allgather") == 0);
        CHECK(bw.at("attn.proj.grad_fp8_cast") == Approx(N * h * cast));
        continue;
      }
      // Under SP the shard is quantized and gathered in fp8 (one byte an
      // element), its amax all-reduced over TP first under current scaling.
      CHECK(fw.at("attn.input.allgather") == Approx(N * h));
      CHECK(fw.count("attn.qkv.fp8_cast") == 0);
      CHECK(fw.count("attn.qkv.fp8_transpose") == 0);
      if (current) {
        CHECK(fw.at("attn.input.fp8_amax_allreduce") == 4);
        CHECK(fw.at("attn.input.fp8_cast") == Approx(Nsp * h * 3));
        CHECK(fw.count("attn.input.fp8_amax") == 0);  // the norm computed it
      } else {
        CHECK(fw.count("attn.input.fp8_cast") == 0);  // the norm wrote fp8
        CHECK(fw.count("attn.input.fp8_amax_allreduce") == 0);
      }
      // Backward: the regather moves fp8 and the transpose follows it.
      CHECK(bw.at("attn.qkv.input_allgather") == Approx(N * h));
      CHECK(bw.at("attn.qkv.input_fp8_transpose") == Approx(N * h * 2));
      // The row-parallel output gradient: quantized on its shard, gathered in
      // fp8, transposed.
      CHECK(bw.at("attn.proj.grad.fp8_cast") == Approx(Nsp * h * 3));
      CHECK(bw.at("attn.proj.grad_allgather") == Approx(N * h));
      CHECK(bw.at("attn.proj.grad_fp8_transpose") == Approx(N * h * 2));
      CHECK(bw.count("attn.proj.grad_fp8_cast") == 0);
      CHECK(bw.count("attn.proj.grad.fp8_amax") == (current ? 1 : 0));
      if (current) CHECK(bw.at("attn.proj.grad.fp8_amax") == Approx(Nsp * h * 2));
      // The input gradient's reduce-scatter waits for the dgrad GEMM only,
      // not for the transpose between them.
      for (const auto& op : ops.backward)
        if (op.name == "attn.qkv.dgrad.reducescatter") {
          REQUIRE(op.after >= 0);
          CHECK(ops.backward[static_cast<std::size_t>(op.after)].name == "attn.qkv.dgrad");
        }
    }
  // bf16 under SP: the gather moves bf16 and no fp8 op appears.
  workload::MicroShape s;
  s.seq_length = 4096;
  s.tp = 4;
  s.sequence_parallel = true;
  const auto ops = workload::transformer_layer_ops(m, s, 0);
  for (const auto& op : ops.forward) {
    CHECK(op.name.find("fp8") == std::string::npos);
    if (op.name == "attn.input.allgather") CHECK(static_cast<double>(op.bytes) == Approx(2 * N * h));
    if (op.name == "ln1") CHECK(static_cast<double>(op.bytes) == Approx(N / t * h * 4));
  }
}

TEST_CASE("Where FP8 GEMMs take any layout, a per-tensor copy serves both ways: casts write one, nothing is transposed",
          "[workload][fp8]") {
  // The Llama 3 8B layer above at TP 4 on a Blackwell GPU (Transformer
  // Engine's is_non_tn_fp8_gemm_supported): each cast reads 2 (after a
  // 2-byte amax pass under current scaling) and writes 1; delayed scaling's
  // norm writes the fp8 copy and no transpose follows; under SP neither the
  // regathered input nor the gathered output gradient is transposed.
  const auto m = test::shipped_model("llama3-8b");
  const double h = 4096, t = 4, N = 4096, proj_in = 4096, ffn = 14336;
  for (const bool sp : {false, true})
    for (const bool current : {false, true}) {
      INFO("sequence parallel " << sp << ", current scaling " << current);
      const auto recipe = current ? strategy::Fp8Recipe::Tensorwise : strategy::Fp8Recipe::Delayed;
      const auto ops = workload::transformer_layer_ops(m, fp8_tp4(sp, recipe, true), 0);
      std::map<std::string, double> fw, bw;
      for (const auto& op : ops.forward) fw[op.name] += static_cast<double>(op.bytes);
      for (const auto& op : ops.backward) bw[op.name] += static_cast<double>(op.bytes);
      const double cast = current ? 5 : 3;
      CHECK(fw.at("attn.proj.fp8_cast") == Approx(N * proj_in / t * cast));
      CHECK(fw.at("mlp.fc2.fp8_cast") == Approx(N * ffn / t * cast));
      for (const auto& [name, bytes] : fw) CHECK(name.find("transpose") == std::string::npos);
      for (const auto& [name, bytes] : bw) CHECK(name.find("transpose") == std::string::npos);
      if (!sp) {
        CHECK(fw.count("attn.qkv.fp8_cast") == (current ? 1u : 0u));
        if (current) CHECK(fw.at("attn.qkv.fp8_cast") == Approx(N * h * 3));  // the norm gave the amax
      } else {
        CHECK(bw.at("attn.qkv.input_allgather") == Approx(N * h));
        CHECK(bw.at("attn.proj.grad_allgather") == Approx(N * h));
      }
    }
  // Block-scaled copies differ by direction: MXFP8 casts both on any GPU.
  const auto tn = workload::transformer_layer_ops(m, fp8_tp4(false, strategy::Fp8Recipe::Mxfp8, false), 0);
  const auto any = workload::transformer_layer_ops(m, fp8_tp4(false, strategy::Fp8Recipe::Mxfp8, true), 0);
  REQUIRE(tn.forward.size() == any.forward.size());
  for (std::size_t i = 0; i < tn.forward.size(); ++i) CHECK(tn.forward[i].bytes == any.forward[i].bytes);
}

TEST_CASE("Block-scaled FP8 quantizes each tensor both ways and gathers the copies the GEMMs need", "[workload][fp8]") {
  // Llama 3 8B at TP 4 as above. One quantized copy with its scales is
  // 1 + 1/32 bytes an element under both recipes (MXFP8: a 1-byte E8M0
  // scale per 32; blockwise: a 4-byte scale per 128). A cast writes both
  // copies from bf16: read 2, write 2·(1 + 1/32) = 4.0625 bytes an element.
  const auto m = test::shipped_model("llama3-8b");
  const double h = 4096, t = 4, N = 4096, Nsp = N / t, qkv = 6144, proj_in = 4096;
  const double copy = 1 + 1.0 / 32, cast = 2 + 2 * copy;
  for (const auto recipe : {strategy::Fp8Recipe::Mxfp8, strategy::Fp8Recipe::Blockwise})
    for (const bool sp : {false, true}) {
      const bool mx = recipe == strategy::Fp8Recipe::Mxfp8;
      INFO(strategy::to_string(recipe) << ", sequence parallel " << sp);
      const workload::MicroShape s = fp8_tp4(sp, recipe);
      CHECK(s.gemm_dtype == (mx ? Dtype::Mxfp8 : Dtype::Fp8));  // blockwise multiplies as fp8
      const auto ops = workload::transformer_layer_ops(m, s, 0);
      std::map<std::string, double> fw, bw, saved;
      for (const auto& op : ops.forward) {
        fw[op.name] += static_cast<double>(op.bytes);
        saved[op.name] += static_cast<double>(op.saved_bytes);
      }
      for (const auto& op : ops.backward) bw[op.name] += static_cast<double>(op.bytes);
      const double rows = sp ? Nsp : N;
      // The norm writes bf16 (no fused quantize), and no amax is read or reduced.
      CHECK(fw.at("ln1") == Approx(rows * h * 4));
      for (const auto& [name, bytes] : fw) CHECK(name.find("amax") == std::string::npos);
      // Inputs from another kernel and output gradients: one cast, both copies.
      CHECK(fw.at("attn.proj.fp8_cast") == Approx(N * proj_in / t * cast));
      CHECK(bw.at("attn.qkv.grad_fp8_cast") == Approx(N * qkv / t * cast));
      // What the wgrad GEMM keeps is the column-wise copy, one per element
      // (FC2's input; the projection's also keeps the attention output in
      // bf16 beside it, which the fused attention holds).
      CHECK(saved.at("mlp.fc2") == Approx(N * 14336 / t * copy));
      CHECK(saved.at("attn.proj") == Approx(N * proj_in / t * (copy + 2)));
      if (!sp) {
        CHECK(fw.at("attn.qkv.fp8_cast") == Approx(N * h * cast));  // the norm's bf16 output
        CHECK(fw.count("attn.qkv.fp8_transpose") == 0);
        continue;
      }
      // Under SP: the shard is quantized both ways, the row-wise copy gathered
      // for the forward GEMM, the column-wise one regathered for the weight
      // gradient; the output gradient's gather moves both copies at once.
      CHECK(fw.at("attn.input.fp8_cast") == Approx(Nsp * h * cast));
      CHECK(fw.at("attn.input.allgather") == Approx(N * h * copy));
      CHECK(bw.at("attn.qkv.input_allgather") == Approx(N * h * copy));
      CHECK(bw.at("attn.proj.grad.fp8_cast") == Approx(Nsp * h * cast));
      CHECK(bw.at("attn.proj.grad_allgather") == Approx(2 * N * h * copy));
      CHECK(bw.count("attn.qkv.input_fp8_transpose") == 0);
      CHECK(bw.count("attn.proj.grad_fp8_transpose") == 0);
      // MXFP8 uses the gathered copies as they are; blockwise reorders the
      // gathered column-wise data (swap_first_dims: read 1, write 1).
      CHECK(bw.count("attn.qkv.input_fp8_swap") == (mx ? 0 : 1));
      CHECK(bw.count("attn.proj.grad_fp8_swap") == (mx ? 0 : 1));
      if (!mx) {
        CHECK(bw.at("attn.qkv.input_fp8_swap") == Approx(N * h * 2));
        CHECK(bw.at("attn.proj.grad_fp8_swap") == Approx(N * h * 2));
      }
    }
}

TEST_CASE("NVFP4 reads every tensor for its amax, quantizes it both ways and reduces gathered amaxes over TP",
          "[workload][fp8]") {
  // Llama 3 8B at TP 4 as above. One NVFP4 copy with its scales is 1/2 +
  // 1/16 bytes an element (two values a byte, a 1-byte scale per 16). Every
  // cast first reads its tensor for the amax (inputs and gradients: of
  // their Hadamard transform too, one pass), then writes both copies: read
  // 2 + 2, write 2·(1/2 + 1/16) = 5.125 bytes an element. The norm writes
  // bf16 without an amax (TE normalization.cpp: UNFUSED with the Hadamard
  // transform).
  const auto m = test::shipped_model("llama3-8b");
  const double h = 4096, t = 4, N = 4096, Nsp = N / t, proj_in = 4096;
  const double copy = 0.5 + 1.0 / 16, cast = 4 + 2 * copy;
  for (const bool sp : {false, true}) {
    INFO("sequence parallel " << sp);
    const workload::MicroShape s = nvfp4_tp4(sp);
    const auto ops = workload::transformer_layer_ops(m, s, 0);
    std::map<std::string, double> fw, bw;
    for (const auto& op : ops.forward) fw[op.name] += static_cast<double>(op.bytes);
    for (const auto& op : ops.backward) bw[op.name] += static_cast<double>(op.bytes);
    CHECK(fw.at("ln1") == Approx((sp ? Nsp : N) * h * 4));
    CHECK(fw.at("attn.proj.fp4_cast") == Approx(N * proj_in / t * cast));
    for (const auto& [name, bytes] : fw) CHECK(name.find("fp8") == std::string::npos);
    for (const auto& op : ops.forward)
      if (op.kind == workload::OpKind::Matmul && op.name.rfind("attn.qkv", 0) == 0) CHECK(op.dtype == Dtype::Nvfp4);
    if (!sp) {
      CHECK(fw.at("attn.qkv.fp4_cast") == Approx(N * h * cast));  // the norm's output: no amax came with it
      continue;
    }
    // Under SP: the shard's amax is read and its row-wise and column-wise
    // amaxes all-reduced over TP (8 bytes) before the cast of both copies;
    // the gathers move the copies the GEMMs need, and the gathered
    // column-wise copies are reordered (read and write 1/2 + 1/16).
    CHECK(fw.at("attn.input.fp4_amax") == Approx(Nsp * h * 2));
    CHECK(fw.at("attn.input.fp4_amax_allreduce") == 8);
    CHECK(fw.at("attn.input.fp4_cast") == Approx(Nsp * h * (2 + 2 * copy)));
    CHECK(fw.at("attn.input.allgather") == Approx(N * h * copy));
    CHECK(bw.at("attn.qkv.input_allgather") == Approx(N * h * copy));
    CHECK(bw.at("attn.qkv.input_fp4_swap") == Approx(N * h * 2 * copy));
    CHECK(bw.at("attn.proj.grad.fp4_amax") == Approx(Nsp * h * 2));
    CHECK(bw.at("attn.proj.grad.fp4_amax_allreduce") == 8);
    CHECK(bw.at("attn.proj.grad_allgather") == Approx(2 * N * h * copy));
    CHECK(bw.at("attn.proj.grad_fp4_swap") == Approx(N * h * 2 * copy));
  }
}

TEST_CASE("FP8 shared experts quantize their input shard and gather it in fp8 under SP", "[workload][fp8][moe]") {
  // Mixtral 8x7B (h 4096, SwiGLU) with a shared expert of width 2048 added,
  // TP 4, one sequence of 4096 tokens. The shared expert's FC1 is a
  // Transformer Engine column-parallel Linear without a fused norm (the MoE
  // layer's pre-MLP norm also feeds the router): under SP it quantizes its
  // input shard and gathers fp8 as LayerNormLinear does (TE linear.py), the
  // shard's quantize a plain one (read 2, write 1; current scaling reads it
  // for the amax first and all-reduces the amax over TP). Without SP it
  // casts its whole input with the transpose, as any unfused input.
  auto m = test::shipped_model("mixtral-8x7b");
  m.moe_shared_expert_intermediate_size = 2048;
  const double h = 4096, t = 4, N = 4096, Nsp = N / t;
  for (const bool sp : {false, true})
    for (const bool current : {false, true}) {
      INFO("sequence parallel " << sp << ", current scaling " << current);
      const auto ops = workload::transformer_layer_ops(m, fp8_tp4(sp, current), 0);
      std::map<std::string, double> fw, bw;
      for (const auto& op : ops.forward) fw[op.name] += static_cast<double>(op.bytes);
      for (const auto& op : ops.backward) bw[op.name] += static_cast<double>(op.bytes);
      if (!sp) {
        CHECK(fw.at("moe.shared.fc1.fp8_cast") == Approx(N * h * (current ? 6 : 4)));
        CHECK(fw.count("moe.shared.input.fp8_cast") == 0);
        continue;
      }
      CHECK(fw.at("moe.shared.input.allgather") == Approx(N * h));
      CHECK(fw.at("moe.shared.input.fp8_cast") == Approx(Nsp * h * 3));
      CHECK(fw.count("moe.shared.fc1.fp8_cast") == 0);
      if (current) {
        CHECK(fw.at("moe.shared.input.fp8_amax") == Approx(Nsp * h * 2));
        CHECK(fw.at("moe.shared.input.fp8_amax_allreduce") == 4);
      } else {
        CHECK(fw.count("moe.shared.input.fp8_amax") == 0);
        CHECK(fw.count("moe.shared.input.fp8_amax_allreduce") == 0);
      }
      // Backward: the regather moves fp8 and the transpose follows it.
      CHECK(bw.at("moe.shared.fc1.input_allgather") == Approx(N * h));
      CHECK(bw.at("moe.shared.fc1.input_fp8_transpose") == Approx(N * h * 2));
    }
}

TEST_CASE("Multi-latent attention runs its down projections on the SP shard and gathers only the latents",
          "[workload][mla]") {
  // DeepSeek-V3 (h 7168, q_lora 1536, kv_lora 512, d_rope 64, 128 heads of
  // d_nope 128 and d_v 128), one sequence of 4096 tokens, TP 2. As
  // Megatron-Core runs MLA since July 2025: the down projections are
  // duplicated over TP and run on the rank's own tokens (Nsp), the latents
  // are gathered for the column-parallel up projections (2 bytes an element
  // in bf16), and the rotary key part is gathered from the SP region.
  const auto m = test::shipped_model("deepseek-v3");
  const double h = 7168, ql = 1536, kl = 512, dr = 64, t = 2, N = 4096, heads = 128;
  for (const bool sp : {false, true}) {
    INFO("sequence parallel " << sp);
    workload::MicroShape s;
    s.seq_length = 4096;
    s.tp = 2;
    s.expert_tp = 2;
    s.sequence_parallel = sp;
    const double Nsp = sp ? N / t : N;
    const auto ops = workload::transformer_layer_ops(m, s, 0);
    std::map<std::string, const workload::OpSpec*> fw, bw;
    for (const auto& op : ops.forward) fw[op.name] = &op;
    for (const auto& op : ops.backward) bw[op.name] = &op;
    CHECK(fw.count("attn.input.allgather") == 0);  // the layer input stays a shard
    CHECK(fw.at("attn.q_down")->flops == Approx(2 * Nsp * ql * h));
    CHECK(fw.at("attn.kv_down")->flops == Approx(2 * Nsp * (kl + dr) * h));
    CHECK(fw.at("attn.q_up")->flops == Approx(2 * N * heads / t * (128 + 64) * ql));
    CHECK(bw.at("attn.q_down.wgrad")->flops == Approx(2 * Nsp * ql * h));
    CHECK(bw.count("attn.q_down.dgrad.allreduce") == 0);  // duplicated: no TP reduction per micro-batch
    if (!sp) {
      CHECK(fw.count("attn.q_up.input.allgather") == 0);
      CHECK(static_cast<double>(bw.at("attn.q_up.dgrad.allreduce")->bytes) == Approx(2 * N * ql));
      CHECK(fw.count("attn.k_rope.allgather") == 0);
      continue;
    }
    CHECK(static_cast<double>(fw.at("attn.q_up.input.allgather")->bytes) == Approx(2 * N * ql));
    CHECK(static_cast<double>(fw.at("attn.kv_up.input.allgather")->bytes) == Approx(2 * N * kl));
    CHECK(static_cast<double>(fw.at("attn.k_rope.allgather")->bytes) == Approx(2 * N * dr));
    CHECK(static_cast<double>(bw.at("attn.q_up.dgrad.reducescatter")->bytes) == Approx(2 * N * ql));
    CHECK(static_cast<double>(bw.at("attn.kv_up.input_allgather")->bytes) == Approx(2 * N * kl));
    CHECK(static_cast<double>(bw.at("attn.k_rope.reducescatter")->bytes) == Approx(2 * N * dr));
    // The latent norms run on the shard.
    CHECK(static_cast<double>(fw.at("attn.kv_norm")->bytes) == Approx(Nsp * kl * 4));
  }
}

TEST_CASE("Each multi-token-prediction depth adds a layer, a projection and a second LM head to the last stage",
          "[workload]") {
  // DeepSeek-V3 (one MTP depth), one micro-batch of 4096 tokens, TP 1: the
  // last stage's block runs the output layer, then the depth's embedding
  // lookup, enorm and hnorm, the 2h → h projection (2·4096·7168·14336 FLOP),
  // one MoE layer as the model's last, and its own final norm, LM head and
  // cross-entropy; the backward runs the depth first.
  const auto m = test::shipped_model("deepseek-v3");
  REQUIRE(m.mtp_num_layers == 1);
  workload::MicroShape s;
  s.seq_length = 4096;
  const auto ops = workload::last_stage_ops(m, s);
  const auto plain = workload::output_ops(m, s);
  const auto layer = workload::transformer_layer_ops(m, s, m.num_layers - 1);
  std::map<std::string, int> fw_count;
  double eh_flops = 0;
  for (const auto& op : ops.forward) {
    ++fw_count[op.name];
    if (op.name == "mtp.eh_proj") eh_flops = op.flops;
  }
  CHECK(fw_count["lm_head"] == 2);
  CHECK(fw_count["embedding.lookup"] == 1);
  CHECK(fw_count["mtp.enorm"] == 1);
  CHECK(eh_flops == Approx(2.0 * 4096 * 7168 * 2 * 7168));
  // Every op of the depth: the embedding's, four of its own (two norms, the
  // concatenation, the projection), the layer's and a whole output block.
  const auto embedding = workload::embedding_ops(m, s);
  CHECK(ops.forward.size() == 2 * plain.forward.size() + embedding.forward.size() + 4 + layer.forward.size());
  CHECK(ops.backward.front().name == plain.backward.front().name);  // the depth's loss first
  CHECK(ops.backward.back().name == plain.backward.back().name);    // the main head's final norm last
  // Without MTP the block is the output layer alone.
  auto dense = m;
  dense.mtp_num_layers = 0;
  CHECK(workload::last_stage_ops(dense, s).forward.size() == plain.forward.size());
}

TEST_CASE("An MTP depth's projection runs in the depth's format", "[workload]") {
  // DeepSeek-V3's depth, one micro-batch of 4096 tokens on one GPU. Megatron-Core
  // runs eh_proj inside the depth's FP8 context (_concat_embeddings under
  // fp8_context), so under MXFP8 its three GEMMs multiply in MXFP8, its 2h-wide
  // input is quantized first (read 2 bytes, write 1 + 1/32 twice: MXFP8's two
  // copies) and the weight gradient keeps that copy, 1 + 1/32 bytes an element
  // where bf16 keeps 2. Under NVFP4 the depth has no quantization context:
  // bf16, no cast.
  const auto m = test::shipped_model("deepseek-v3");
  const double N = 4096, w = 2 * 7168.0;
  const auto depth_ops = [&](const char* precision, const char* recipe) {
    config::StrategyInput st;
    st.gpus = 64;
    st.ep = 64;
    st.global_batch_size = 64;
    st.seq_length = 4096;
    st.precision = precision;
    if (recipe) st.fp8_recipe = recipe;
    if (std::string(precision) == "nvfp4") st.fp4_format = "e2m1";
    return workload::last_stage_ops(m, workload::micro_shape(m, config::resolve_run(m, st).parallel));
  };
  const auto find = [](const std::vector<workload::OpSpec>& ops, const std::string& name) {
    const auto it = std::find_if(ops.begin(), ops.end(), [&](const workload::OpSpec& op) { return op.name == name; });
    REQUIRE(it != ops.end());
    return *it;
  };
  const auto mx = depth_ops("fp8", "mxfp8");
  for (const char* gemm : {"mtp.eh_proj.dgrad", "mtp.eh_proj.wgrad"})
    CHECK(find(mx.backward, gemm).dtype == Dtype::Mxfp8);
  const auto fw = find(mx.forward, "mtp.eh_proj");
  CHECK(fw.dtype == Dtype::Mxfp8);
  CHECK(static_cast<double>(fw.saved_bytes) == Approx((1 + 1.0 / 32) * N * w));
  CHECK(static_cast<double>(find(mx.forward, "mtp.eh_proj.fp8_cast").bytes) ==
        Approx(N * w * (2 + 2 * (1 + 1.0 / 32))));
  const auto fp4 = depth_ops("nvfp4", nullptr);
  const auto fw4 = find(fp4.forward, "mtp.eh_proj");
  CHECK(fw4.dtype == Dtype::Bf16);
  CHECK(static_cast<double>(fw4.saved_bytes) == Approx(2 * N * w));
  CHECK(std::none_of(fp4.forward.begin(), fp4.forward.end(),
                     [](const workload::OpSpec& op) { return op.name.rfind("mtp.eh_proj.", 0) == 0; }));
}

TEST_CASE("The MTP depths' parameters sit on the last stage, with a word embedding of their own", "[workload]") {
  // Llama 3 8B given one MTP depth: on one stage the rank holds the whole
  // model, total_parameters (the depth's layer, its 2h·h projection and three
  // norms included). On two stages the last holds the depth and, the
  // embedding being on the first and untied, a copy of the word embedding
  // for the depth's lookups (128256·4096), kept in step with the first's.
  auto m = test::shipped_model("llama3-8b");
  m.mtp_num_layers = 1;
  config::StrategyInput s;
  s.gpus = 1;
  s.global_batch_size = 1;
  const auto one = workload::stage_parameters(m, config::resolve_run(m, s).parallel, 0);
  CHECK(one.total() == model::total_parameters(m));
  s.gpus = 2;
  s.pp = 2;
  const auto c = config::resolve_run(m, s).parallel;
  const auto first = workload::stage_parameters(m, c, 0), last = workload::stage_parameters(m, c, 1);
  CHECK(first.total() + last.total() == model::total_parameters(m) + 128256LL * 4096);
  CHECK(model::mtp_depth_parameters(m) == model::layer_parameters(m, 31) + 2LL * 4096 * 4096 + 3 * 4096);
}

TEST_CASE("The host waits each MoE layer for the exchange that gives it the experts' token counts", "[workload]") {
  // Megatron-Core at d98e8a64dd: the all-to-all dispatcher copies the
  // gathered counts to the host before its exchange; the others hand the
  // experts device-side counts that TE's grouped GEMM copies to the host
  // (tokens_per_expert.tolist()), so the host waits for the dispatch itself;
  // dropping and padding to a capacity fixes the counts on the host.
  const auto m = test::shipped_model("qwen3-30b-a3b");
  const auto waited = [&](strategy::MoeDispatcher d, std::optional<double> capacity) {
    workload::MicroShape s;
    s.seq_length = 4096;
    s.ep = 8;
    s.moe_dispatcher = d;
    s.capacity_factor = capacity;
    std::vector<std::string> names;
    for (const auto& op : workload::transformer_layer_ops(m, s, 0).forward)
      if (op.flags & taskgraph::kHostWaitsForTask) names.push_back(op.name);
    return names;
  };
  using D = strategy::MoeDispatcher;
  CHECK(waited(D::AllToAll, std::nullopt) == std::vector<std::string>{"moe.dispatch.counts_allgather"});
  CHECK(waited(D::AllGather, std::nullopt) == std::vector<std::string>{"moe.dispatch"});
  CHECK(waited(D::Flex, std::nullopt) == std::vector<std::string>{"moe.dispatch"});
  CHECK(waited(D::Flex, 1.0).empty());
}

TEST_CASE("A causal sliding window counts its band of scores, and a window as long as the sequence is causal",
          "[workload]") {
  // gpt-oss-120b: 64 query heads of 64, window 128 on its even layers. At
  // 4096 tokens a head's band is 128·129/2 + (4096 − 128)·128 = 516,160
  // scores, 4 FLOPs per score and head dim forward (Q·Kᵀ and P·V), twice
  // that for the backward's task (its kernel executes 2.5×, compute_cost).
  const auto m = test::shipped_model("gpt-oss-120b");
  workload::MicroShape s;
  s.seq_length = 4096;
  REQUIRE(m.is_sliding_window_layer(0));
  REQUIRE_FALSE(m.is_sliding_window_layer(1));
  const auto attention = [&](std::int64_t layer, const char* name, bool backward) {
    const auto ops = workload::transformer_layer_ops(m, s, layer);
    for (const auto& op : backward ? ops.backward : ops.forward)
      if (op.name == name) return op;
    FAIL("no " << name);
    return workload::OpSpec{};
  };
  const double band = 128.0 * 129 / 2 + (4096.0 - 128) * 128;
  const auto windowed = attention(0, "attn.flash", false);
  CHECK(windowed.flops == Approx(4 * 64 * band * 64));
  CHECK(windowed.flags == taskgraph::kSlidingWindow);
  CHECK(windowed.shape[2] == 128);
  const auto windowed_bwd = attention(0, "attn.flash.bwd", true);
  CHECK(windowed_bwd.flops == Approx(2 * 4 * 64 * band * 64));
  CHECK(windowed_bwd.flags == (taskgraph::kSlidingWindow | taskgraph::kBackwardPass));
  // The full layers: causal over the sequence.
  const auto full = attention(1, "attn.flash", false);
  CHECK(full.flags == taskgraph::kCausal);
  CHECK(full.flops == Approx(4 * 64 * 4096.0 * 4096 * 64));
  // Gemma 2's window of 4096 over 4096 tokens is causal attention (it was
  // priced as every query seeing 4096 keys, twice the work).
  const auto gemma = test::shipped_model("gemma2-2b-it");
  REQUIRE(gemma.is_sliding_window_layer(0));
  s.seq_length = 4096;
  for (const auto& op : workload::transformer_layer_ops(gemma, s, 0).forward)
    if (op.name == "attn.flash") {
      CHECK(op.flags == taskgraph::kCausal);
      CHECK(op.shape[2] == 4096);
    }
}

TEST_CASE("FP8 attention multiplies in the recipe's format after quantizing Q, K, V and the output gradient",
          "[workload]") {
  // Llama 3 8B, one GPU, 8192 tokens: Q is 32·128 = 4096 wide, K and V
  // 8·128 = 1024 each. Per-tensor current scaling reads an element for its
  // amax, again for the cast, and writes one byte: 5 bytes; MXFP8 reads it
  // once and writes a byte and a 1-byte scale per 32: 3 + 1/32.
  const auto m = test::shipped_model("llama3-8b");
  config::StrategyInput s;
  s.gpus = 1;
  s.global_batch_size = 1;
  s.precision = "fp8";
  s.fp8_dot_product_attention = true;
  const double tokens = 8192;
  const auto check = [&](const char* recipe, Dtype dtype, double bytes_per_element) {
    INFO(recipe);
    s.fp8_recipe = recipe;
    const auto run = config::resolve_run(m, s);
    const auto ops = workload::transformer_layer_ops(m, workload::micro_shape(run.model, run.parallel), 0);
    std::map<std::string, workload::OpSpec> by_name;
    for (const auto& op : ops.forward) by_name[op.name] = op;
    for (const auto& op : ops.backward) by_name[op.name] = op;
    REQUIRE(by_name.contains("attn.fp8_quantize"));
    CHECK(static_cast<double>(by_name["attn.fp8_quantize"].bytes) ==
          Approx(bytes_per_element * tokens * (4096 + 2 * 1024)));
    CHECK(static_cast<double>(by_name["attn.grad_fp8_quantize"].bytes) == Approx(bytes_per_element * tokens * 4096));
    CHECK(by_name["attn.flash"].dtype == dtype);
    CHECK(by_name["attn.flash.bwd"].dtype == dtype);
  };
  check("tensorwise", Dtype::Fp8, 5);
  check("mxfp8", Dtype::Mxfp8, 3 + 1.0 / 32);
  // Without it attention stays bf16 and nothing is quantized for it.
  s.fp8_dot_product_attention.reset();
  const auto run = config::resolve_run(m, s);
  for (const auto& op : workload::transformer_layer_ops(m, workload::micro_shape(run.model, run.parallel), 0).forward) {
    CHECK(op.name != "attn.fp8_quantize");
    if (op.name == "attn.flash") CHECK(op.dtype == Dtype::Bf16);
  }
}

TEST_CASE("FP8 attention is refused where Transformer Engine has no kernel for it", "[config]") {
  const auto m = test::shipped_model("llama3-8b");
  config::StrategyInput s;
  s.gpus = 2;
  s.global_batch_size = 2;
  s.fp8_dot_product_attention = true;
  CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains("needs FP8 training"));
  s.precision = "fp8";
  s.fp8_recipe = "blockwise";
  CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains("Float8BlockScaling"));
  s.fp8_recipe = "delayed";
  s.attention_backend = "unfused";
  CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains("attention backend unfused"));
  s.attention_backend.reset();
  s.cp = 2;
  CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains("context parallelism is not modelled"));
  s.cp.reset();
  CHECK(config::resolve_run(m, s).parallel.attention_dtype() == Dtype::Fp8);
}

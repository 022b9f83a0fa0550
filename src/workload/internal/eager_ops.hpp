// PyTorch eager's memory-bound ops, one kernel an op, as torchtitan's Llama
// code ran them in its December 2024 benchmarks (torchtitan 9dec370 on torch
// 1963fc8, benchmarks/llama3_h100_202412_torchtitan.md): what
// --kernel-fusion eager puts where Transformer Engine and Megatron-Core run
// one fused kernel. Bytes per element are autograd's kernels' reads and
// writes (bf16 2, fp32 4, complex64 8 per complex pair); "rows": the
// per-row statistics. Private to workload/.
#pragma once

#include <string>
#include <vector>

#include "ptsim/model/model_spec.hpp"
#include "ptsim/workload/op_spec.hpp"

namespace ptsim::workload::internal {

struct EagerOps {
  std::vector<OpSpec> forward;
  std::vector<OpSpec> backward;  // in issue order
};

// Eager kernels split a norm only when it is RMSNorm: PyTorch's LayerNorm
// is one ATen kernel each way, as fused as Transformer Engine's.
inline bool splits_norm(const model::ModelSpec& m, bool eager) {
  return eager && m.normalization == model::Normalization::RmsNorm;
}

// torchtitan's RMSNorm class (torchtitan/models/norms.py at 9dec370, the
// default norm_type): self._norm(x.float()).type_as(x) * self.weight with
// _norm = x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps). PyTorch's own
// F.rms_norm was the same composite of ATen ops until its fused CUDA kernel
// (pytorch/pytorch PR #153666, May 2025). Forward, per element: float 2+4,
// pow 4+4, mean 4, mul by the row's rsqrt 4+4, type_as 4+2, weight 2+2 (36
// bytes) and three per-row kernels (mean's output, + eps, rsqrt); autograd
// keeps the fp32 copy (pow's and mul's input) and the bf16 normalized value
// (the weight product's input): 6 bytes an element, and the rsqrt per row.
// Backward, thirteen kernels, 92 bytes an element: grad·weight 2+2,
// grad·y 4+2 with its sum over rows for the weight 2, cast to fp32 2+4,
// ·rsqrt 4+4, ·x 8+4, its row sum 4, mean's expand 4, pow's x¹ copy 4+4,
// 2·x 4+4, grad·2x 8+4, the two branches' sum 8+4, cast back 4+2.
inline EagerOps eager_rms_norm(const std::string& name, double elements, double rows) {
  using taskgraph::KernelClass;
  const double e = elements, r = rows;
  EagerOps ops;
  auto& fw = ops.forward;
  fw.push_back(memory_op(name + ".float", e * 6));
  fw.back().saved_bytes = as_bytes(e * 6 + r * 4);
  fw.push_back(memory_op(name + ".pow", e * 8));
  fw.push_back(memory_op(name + ".mean", e * 4 + r * 4, KernelClass::Norm));
  fw.push_back(memory_op(name + ".add_eps", r * 8));
  fw.push_back(memory_op(name + ".rsqrt", r * 8));
  fw.push_back(memory_op(name + ".mul", e * 8 + r * 4));
  fw.push_back(memory_op(name + ".type_as", e * 6));
  fw.push_back(memory_op(name + ".mul_weight", e * 4));
  auto& bw = ops.backward;
  for (const auto& [kernel, bytes] : std::vector<std::pair<const char*, double>>{{".mul_weight.bwd", 4},
                                                                                 {".weight_grad.mul", 6},
                                                                                 {".weight_grad.sum", 2},
                                                                                 {".type_as.bwd", 6},
                                                                                 {".mul.bwd_x", 8},
                                                                                 {".mul.bwd_rsqrt", 12},
                                                                                 {".rsqrt.bwd_sum", 4},
                                                                                 {".mean.bwd", 4},
                                                                                 {".pow.bwd_copy", 8},
                                                                                 {".pow.bwd_scale", 8},
                                                                                 {".pow.bwd", 12},
                                                                                 {".grad_add", 12},
                                                                                 {".float.bwd", 6}})
    bw.push_back(memory_op(name + kernel, e * bytes));
  bw.back().freed_bytes = as_bytes(e * 6 + r * 4);
  return ops;
}

// torchtitan's apply_rotary_emb (torchtitan/models/llama/model.py at
// 9dec370): for the query and the key each, x.float() 2+4, view_as_complex,
// the complex64 product with freqs_cis 4+4, view_as_real, type_as 4+2: 20
// bytes an element in three kernels; the backward mirrors it (cast, product
// with the conjugate, cast back). Nothing kept: freqs_cis is a constant.
inline EagerOps eager_rope(double q_elements, double k_elements) {
  EagerOps ops;
  for (const auto& [tensor, e] : {std::pair<const char*, double>{"q", q_elements}, {"k", k_elements}}) {
    const std::string name = std::string("attn.rope.") + tensor;
    ops.forward.push_back(memory_op(name + ".float", e * 6));
    ops.forward.push_back(memory_op(name + ".complex_mul", e * 8));
    ops.forward.push_back(memory_op(name + ".type_as", e * 6));
    ops.backward.push_back(memory_op(name + ".type_as.bwd", e * 6));
    ops.backward.push_back(memory_op(name + ".complex_mul.bwd", e * 8));
    ops.backward.push_back(memory_op(name + ".float.bwd", e * 6));
  }
  return ops;
}

// torchtitan's repeat_kv (model.py at 9dec370): unsqueeze, expand, reshape,
// which copies the grouped keys and values to every query head (read the
// group 2/n_rep, write 2 bytes an expanded element); the backward sums the
// copies back (read 2, write 2/n_rep). Attention then runs, and keeps, full
// multi-head K and V.
inline EagerOps eager_repeat_kv(double grouped_elements, double expanded_elements) {
  EagerOps ops;
  for (const char* tensor : {"k", "v"}) {
    const std::string name = std::string("attn.repeat_kv.") + tensor;
    ops.forward.push_back(memory_op(name, 2 * grouped_elements + 2 * expanded_elements));
    ops.backward.push_back(
        memory_op(name + ".bwd_sum", 2 * expanded_elements + 2 * grouped_elements, taskgraph::KernelClass::Norm));
  }
  return ops;
}

// torchtitan's FeedForward (model.py at 9dec370): w2(F.silu(w1(x)) * w3(x)).
// Forward, per hidden element: silu 2+2, the gate product 4+2; autograd
// keeps silu's input and both factors of the product (6 bytes). Backward:
// the product's two gradients 4+2 each, silu's backward 4+2 (reads the
// gradient and the input, writes).
inline EagerOps eager_swiglu(const std::string& prefix, double elements) {
  const double e = elements;
  EagerOps ops;
  ops.forward.push_back(memory_op(prefix + ".silu", e * 4));
  ops.forward.back().saved_bytes = as_bytes(e * 6);
  ops.forward.push_back(memory_op(prefix + ".gate_mul", e * 6));
  ops.backward.push_back(memory_op(prefix + ".gate_mul.bwd_silu", e * 6));
  ops.backward.push_back(memory_op(prefix + ".gate_mul.bwd_gate", e * 6));
  ops.backward.push_back(memory_op(prefix + ".silu.bwd", e * 6));
  ops.backward.back().freed_bytes = as_bytes(e * 6);
  return ops;
}

}  // namespace ptsim::workload::internal

// The attention benchmark (see benchmarks.hpp): ptsim's fused kernels
// (attention_kernels.cu) timed on one problem, after a check of both passes
// against a double-precision reference on the host.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_kernels.cuh"
#include "benchmarks.hpp"

namespace ptsim::microbench::cuda {

namespace {

std::vector<double> host(const DeviceBuffer<__nv_bfloat16>& b) {
  const auto h = b.to_host();
  std::vector<double> out(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) out[i] = __bfloat162float(h[i]);
  return out;
}

// Forward and backward of one small problem against a double-precision
// reference on the host (FlashAttention-2 §3.1's equations, unfused).
bool verify(int d, bool causal) {
  const std::size_t bh = 2;
  const int s = 128;
  const std::size_t n = bh * s * d;
  AttentionTensors t(n, bh * s);
  random_fill(t.q.get(), n, 101, 1.0f);
  random_fill(t.k.get(), n, 102, 1.0f);
  random_fill(t.v.get(), n, 103, 1.0f);
  random_fill(t.dout.get(), n, 104, 1.0f);
  attention_forward(t, bh, s, d, causal);
  attention_backward(t, bh, s, d, causal);
  PTSIM_CUDA_CHECK(cudaDeviceSynchronize());
  PTSIM_CUDA_CHECK(cudaGetLastError());
  const auto q = host(t.q), k = host(t.k), v = host(t.v), dout = host(t.dout);
  const auto o = host(t.o), dq = host(t.dq), dk = host(t.dk), dv = host(t.dv);
  const double scale = 1 / std::sqrt(static_cast<double>(d));
  double worst = 0, largest = 1e-9;
  std::vector<double> eq(n, 0), ek(n, 0), ev(n, 0);
  for (std::size_t h = 0; h < bh; ++h) {
    const std::size_t base = h * s * d;
    std::vector<double> p(static_cast<std::size_t>(s) * s, 0), dp(static_cast<std::size_t>(s) * s, 0);
    for (int i = 0; i < s; ++i) {
      double mx = -1e300;
      for (int j = 0; j < s; ++j) {
        double dot = 0;
        for (int c = 0; c < d; ++c) dot += q[base + i * d + c] * k[base + j * d + c];
        p[i * s + j] = (causal && j > i) ? -1e300 : dot * scale;
        mx = std::max(mx, p[i * s + j]);
      }
      double sum = 0;
      for (int j = 0; j < s; ++j) sum += (p[i * s + j] = p[i * s + j] < -1e299 ? 0 : std::exp(p[i * s + j] - mx));
      for (int j = 0; j < s; ++j) p[i * s + j] /= sum;
      for (int c = 0; c < d; ++c) {
        double out = 0;
        for (int j = 0; j < s; ++j) out += p[i * s + j] * v[base + j * d + c];
        worst = std::max(worst, std::abs(out - o[base + i * d + c]));
        largest = std::max(largest, std::abs(out));
      }
      double di = 0;
      for (int j = 0; j < s; ++j) {
        double g = 0;
        for (int c = 0; c < d; ++c) g += dout[base + i * d + c] * v[base + j * d + c];
        dp[i * s + j] = g;
        di += p[i * s + j] * g;
      }
      for (int j = 0; j < s; ++j) {
        const double ds = p[i * s + j] * (dp[i * s + j] - di);
        for (int c = 0; c < d; ++c) {
          eq[base + i * d + c] += scale * ds * k[base + j * d + c];
          ek[base + j * d + c] += scale * ds * q[base + i * d + c];
          ev[base + j * d + c] += p[i * s + j] * dout[base + i * d + c];
        }
      }
    }
  }
  const auto check = [&](const std::vector<double>& expect, const std::vector<double>& got) {
    double err = 0, big = 1e-9;
    for (std::size_t i = 0; i < n; ++i) {
      err = std::max(err, std::abs(expect[i] - got[i]));
      big = std::max(big, std::abs(expect[i]));
    }
    return err <= 3e-2 * big;
  };
  return worst <= 2e-2 * largest && check(eq, dq) && check(ek, dk) && check(ev, dv);
}

}  // namespace

Result attention(std::uint64_t batch_heads, std::uint64_t seq, std::uint64_t head_dim, bool causal, bool backward,
                 const Method& method) {
  if (head_dim != 64 && head_dim != 128)
    throw std::runtime_error("attention: head dim " + std::to_string(head_dim) + " not supported (64 or 128)");
  if (seq % kAttentionBlock != 0)
    throw std::runtime_error("attention: sequence length " + std::to_string(seq) + " is not a multiple of 64");
  static bool prepared = false;
  if (!prepared) {
    prepare_attention_kernels();
    prepared = true;
  }
  const bool ok = verify(static_cast<int>(head_dim), causal);
  const std::size_t n = batch_heads * seq * head_dim;
  AttentionTensors t(n, batch_heads * seq);
  random_fill(t.q.get(), n, 1, 1.0f);
  random_fill(t.k.get(), n, 2, 1.0f);
  random_fill(t.v.get(), n, 3, 1.0f);
  random_fill(t.dout.get(), n, 4, 1.0f);
  const int s = static_cast<int>(seq);
  const int d = static_cast<int>(head_dim);
  const auto forward = [&] { attention_forward(t, batch_heads, s, d, causal); };
  const auto run = [&] {
    if (!backward) return forward();
    attention_backward(t, batch_heads, s, d, causal);
  };
  if (backward) forward();  // the statistics the backward pass reads
  const double f = 4.0 * double(batch_heads) * double(seq) * double(seq) * double(head_dim);
  const double tensor_bytes = double(n) * 2;
  return {"attention",
          "bf16",
          {{"batch_heads", double(batch_heads)},
           {"seq_q", double(seq)},
           {"seq_kv", double(seq)},
           {"head_dim", double(head_dim)},
           {"causal", causal ? 1.0 : 0.0},
           {"backward", backward ? 1.0 : 0.0}},
          time_repeated(method, [&] { return event_seconds(run); }),
          backward ? 2 * f : f,  // ptsim's convention (the step's model FLOPs); ptsim adds the recomputation
          backward ? 8 * tensor_bytes : 4 * tensor_bytes,
          ok};
}

}  // namespace ptsim::microbench::cuda

// ptsim's fused attention kernels (see benchmarks.hpp): FlashAttention-2's
// algorithm (Dao 2023) on WMMA tensor-core tiles — the s×s scores never leave
// shared memory, the softmax is computed online, the backward pass recomputes
// the scores. bf16 inputs, fp32 accumulation, head dims 64 and 128, sequence
// lengths multiple of 64. A reference kernel, not a tuned library: ptsim
// records which implementation it measured.
#include <mma.h>

#include <cmath>

#include "benchmarks.hpp"
#include "common.cuh"

namespace ptsim::microbench::cuda {

namespace {

using bf16 = __nv_bfloat16;
using namespace nvcuda;
constexpr int kBlock = 64;  // queries (forward) or keys (backward) per thread block
constexpr int kWarps = 4;   // 16 rows each

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragAcol = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::col_major>;
using FragBcol = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;
using FragBrow = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

template <int D>
constexpr std::size_t forward_smem() {
  return 3 * kBlock * D * sizeof(bf16) + kWarps * 16 * kBlock * (sizeof(float) + sizeof(bf16)) +
         2 * kWarps * 16 * D * sizeof(float) + 2 * kBlock * sizeof(float);
}

template <int D>
__global__ void __launch_bounds__(128) flash_forward(const bf16* Q, const bf16* K, const bf16* V, bf16* O,
                                                     float* L, int S, float scale, bool causal) {
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* sQ = reinterpret_cast<bf16*>(smem);
  bf16* sK = sQ + kBlock * D;
  bf16* sV = sK + kBlock * D;
  float* sS = reinterpret_cast<float*>(sV + kBlock * D);
  bf16* sP = reinterpret_cast<bf16*>(sS + kWarps * 16 * kBlock);
  float* sO = reinterpret_cast<float*>(sP + kWarps * 16 * kBlock);
  float* sT = sO + kWarps * 16 * D;
  float* sM = sT + kWarps * 16 * D;
  float* sL = sM + kBlock;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::size_t head = static_cast<std::size_t>(blockIdx.y) * S * D;
  const int q0 = blockIdx.x * kBlock;
  for (int i = threadIdx.x; i < kBlock * D; i += blockDim.x) sQ[i] = Q[head + static_cast<std::size_t>(q0) * D + i];
  for (int i = threadIdx.x; i < kWarps * 16 * D; i += blockDim.x) sO[i] = 0;
  for (int i = threadIdx.x; i < kBlock; i += blockDim.x) {
    sM[i] = -INFINITY;
    sL[i] = 0;
  }
  __syncthreads();
  const int row = lane / 2, half = lane % 2, r = warp * 16 + row, qi = q0 + r;
  const int blocks = causal ? blockIdx.x + 1 : S / kBlock;
  for (int kb = 0; kb < blocks; ++kb) {
    const std::size_t k0 = head + static_cast<std::size_t>(kb) * kBlock * D;
    for (int i = threadIdx.x; i < kBlock * D; i += blockDim.x) {
      sK[i] = K[k0 + i];
      sV[i] = V[k0 + i];
    }
    __syncthreads();
    // S (16 × 64) = Q_w · Kᵀ
    for (int nt = 0; nt < kBlock / 16; ++nt) {
      FragC acc;
      wmma::fill_fragment(acc, 0.0f);
      for (int kt = 0; kt < D / 16; ++kt) {
        FragA a;
        FragBcol b;
        wmma::load_matrix_sync(a, sQ + warp * 16 * D + kt * 16, D);
        wmma::load_matrix_sync(b, sK + nt * 16 * D + kt * 16, D);
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(sS + warp * 16 * kBlock + nt * 16, acc, kBlock, wmma::mem_row_major);
    }
    __syncwarp();
    // Online softmax: two lanes per row, 32 columns each.
    float* srow = sS + warp * 16 * kBlock + row * kBlock;
    float mx = -INFINITY;
    for (int c = half * 32; c < half * 32 + 32; ++c) {
      float s = srow[c] * scale;
      if (causal && kb * kBlock + c > qi) s = -INFINITY;
      srow[c] = s;
      mx = fmaxf(mx, s);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    const float m_old = sM[r];
    const float m_new = fmaxf(m_old, mx);
    const float alpha = m_old == -INFINITY ? 0.0f : __expf(m_old - m_new);
    float sum = 0;
    for (int c = half * 32; c < half * 32 + 32; ++c) {
      const float p = srow[c] == -INFINITY ? 0.0f : __expf(srow[c] - m_new);
      sP[warp * 16 * kBlock + row * kBlock + c] = __float2bfloat16(p);
      sum += p;
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    if (half == 0) {
      sM[r] = m_new;
      sL[r] = sL[r] * alpha + sum;
    }
    __syncwarp();
    // T (16 × D) = P · V, then O = O · α + T row by row.
    for (int dt = 0; dt < D / 16; ++dt) {
      FragC acc;
      wmma::fill_fragment(acc, 0.0f);
      for (int kt = 0; kt < kBlock / 16; ++kt) {
        FragA a;
        FragBrow b;
        wmma::load_matrix_sync(a, sP + warp * 16 * kBlock + kt * 16, kBlock);
        wmma::load_matrix_sync(b, sV + kt * 16 * D + dt * 16, D);
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(sT + warp * 16 * D + dt * 16, acc, D, wmma::mem_row_major);
    }
    __syncwarp();
    for (int c = half * (D / 2); c < (half + 1) * (D / 2); ++c) {
      float& o = sO[warp * 16 * D + row * D + c];
      o = o * alpha + sT[warp * 16 * D + row * D + c];
    }
    __syncthreads();
  }
  const float inv = 1.0f / sL[r];
  for (int c = half * (D / 2); c < (half + 1) * (D / 2); ++c)
    O[head + static_cast<std::size_t>(qi) * D + c] = __float2bfloat16(sO[warp * 16 * D + row * D + c] * inv);
  if (half == 0) L[static_cast<std::size_t>(blockIdx.y) * S + qi] = sM[r] + __logf(sL[r]);
}

// D_i = Σ_d dO_i,d · O_i,d, per query row.
template <int D>
__global__ void row_dot(const bf16* dO, const bf16* O, float* Dvec, std::size_t rows) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= rows) return;
  float s = 0;
  for (int d = 0; d < D; ++d) s += __bfloat162float(dO[i * D + d]) * __bfloat162float(O[i * D + d]);
  Dvec[i] = s;
}

template <int D>
constexpr std::size_t backward_smem() {
  return 4 * kBlock * D * sizeof(bf16) + kWarps * 16 * kBlock * (sizeof(float) + 2 * sizeof(bf16)) +
         kBlock * D * sizeof(float) + kWarps * 16 * 16 * sizeof(float) + 2 * kBlock * sizeof(float);
}

// One block per 64 keys; each warp owns 16 keys and sweeps the query blocks.
template <int D>
__global__ void __launch_bounds__(128) flash_backward(const bf16* Q, const bf16* K, const bf16* V, const bf16* dO,
                                                      const float* L, const float* Dvec, float* dQ, bf16* dK,
                                                      bf16* dV, int S, float scale, bool causal) {
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* sK = reinterpret_cast<bf16*>(smem);
  bf16* sV = sK + kBlock * D;
  bf16* sQ = sV + kBlock * D;
  bf16* sdO = sQ + kBlock * D;
  float* sS = reinterpret_cast<float*>(sdO + kBlock * D);  // per warp 16 × 64: Sᵀ, then dPᵀ
  bf16* sPT = reinterpret_cast<bf16*>(sS + kWarps * 16 * kBlock);
  bf16* sdST = sPT + kWarps * 16 * kBlock;
  float* sdQ = reinterpret_cast<float*>(sdST + kWarps * 16 * kBlock);
  float* sTile = sdQ + kBlock * D;
  float* sLq = sTile + kWarps * 16 * 16;
  float* sDq = sLq + kBlock;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::size_t head = static_cast<std::size_t>(blockIdx.y) * S * D;
  const int k0 = blockIdx.x * kBlock;
  for (int i = threadIdx.x; i < kBlock * D; i += blockDim.x) {
    sK[i] = K[head + static_cast<std::size_t>(k0) * D + i];
    sV[i] = V[head + static_cast<std::size_t>(k0) * D + i];
  }
  FragC dk[D / 16], dv[D / 16];
  for (int t = 0; t < D / 16; ++t) {
    wmma::fill_fragment(dk[t], 0.0f);
    wmma::fill_fragment(dv[t], 0.0f);
  }
  const int row = lane / 2, half = lane % 2, key = k0 + warp * 16 + row;
  for (int qb = causal ? blockIdx.x : 0; qb < S / kBlock; ++qb) {
    const std::size_t q0 = head + static_cast<std::size_t>(qb) * kBlock * D;
    __syncthreads();
    for (int i = threadIdx.x; i < kBlock * D; i += blockDim.x) {
      sQ[i] = Q[q0 + i];
      sdO[i] = dO[q0 + i];
      sdQ[i] = 0;
    }
    for (int i = threadIdx.x; i < kBlock; i += blockDim.x) {
      sLq[i] = L[static_cast<std::size_t>(blockIdx.y) * S + qb * kBlock + i];
      sDq[i] = Dvec[static_cast<std::size_t>(blockIdx.y) * S + qb * kBlock + i];
    }
    __syncthreads();
    float* sw = sS + warp * 16 * kBlock;
    // Sᵀ (16 keys × 64 queries) = K_w · Qᵀ → Pᵀ = exp(Sᵀ·scale − L_q)
    for (int nt = 0; nt < kBlock / 16; ++nt) {
      FragC acc;
      wmma::fill_fragment(acc, 0.0f);
      for (int kt = 0; kt < D / 16; ++kt) {
        FragA a;
        FragBcol b;
        wmma::load_matrix_sync(a, sK + warp * 16 * D + kt * 16, D);
        wmma::load_matrix_sync(b, sQ + nt * 16 * D + kt * 16, D);
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(sw + nt * 16, acc, kBlock, wmma::mem_row_major);
    }
    __syncwarp();
    for (int c = half * 32; c < half * 32 + 32; ++c) {
      const bool masked = causal && key > qb * kBlock + c;
      const float p = masked ? 0.0f : __expf(sw[row * kBlock + c] * scale - sLq[c]);
      sw[row * kBlock + c] = p;
      sPT[warp * 16 * kBlock + row * kBlock + c] = __float2bfloat16(p);
    }
    __syncwarp();
    // dV_w += Pᵀ · dO
    for (int dt = 0; dt < D / 16; ++dt)
      for (int kt = 0; kt < kBlock / 16; ++kt) {
        FragA a;
        FragBrow b;
        wmma::load_matrix_sync(a, sPT + warp * 16 * kBlock + kt * 16, kBlock);
        wmma::load_matrix_sync(b, sdO + kt * 16 * D + dt * 16, D);
        wmma::mma_sync(dv[dt], a, b, dv[dt]);
      }
    // dPᵀ (16 × 64) = V_w · dOᵀ, into a buffer of its own: Pᵀ (fp32) stays in sw.
    float* sdp = sTile + warp * 16 * 16;  // one 16 × 16 tile at a time
    for (int nt = 0; nt < kBlock / 16; ++nt) {
      FragC acc;
      wmma::fill_fragment(acc, 0.0f);
      for (int kt = 0; kt < D / 16; ++kt) {
        FragA a;
        FragBcol b;
        wmma::load_matrix_sync(a, sV + warp * 16 * D + kt * 16, D);
        wmma::load_matrix_sync(b, sdO + nt * 16 * D + kt * 16, D);
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(sdp, acc, 16, wmma::mem_row_major);
      __syncwarp();
      // dSᵀ = Pᵀ ∘ (dPᵀ − D_q), 16 × 16 of this tile: 8 elements per lane.
      for (int e = lane; e < 256; e += 32) {
        const int rr = e / 16, cc = e % 16, q = nt * 16 + cc;
        const float p = sw[rr * kBlock + q];
        sdST[warp * 16 * kBlock + rr * kBlock + q] = __float2bfloat16(p * (sdp[e] - sDq[q]));
      }
      __syncwarp();
    }
    // dK_w += dSᵀ · Q   (scaled at the end)
    for (int dt = 0; dt < D / 16; ++dt)
      for (int kt = 0; kt < kBlock / 16; ++kt) {
        FragA a;
        FragBrow b;
        wmma::load_matrix_sync(a, sdST + warp * 16 * kBlock + kt * 16, kBlock);
        wmma::load_matrix_sync(b, sQ + kt * 16 * D + dt * 16, D);
        wmma::mma_sync(dk[dt], a, b, dk[dt]);
      }
    // dQ (64 × D) += dS · K_w: dS is dSᵀ read column-major; summed over warps in shared memory.
    for (int qt = 0; qt < kBlock / 16; ++qt)
      for (int dt = 0; dt < D / 16; ++dt) {
        FragC acc;
        wmma::fill_fragment(acc, 0.0f);
        FragAcol a;
        FragBrow b;
        wmma::load_matrix_sync(a, sdST + warp * 16 * kBlock + qt * 16, kBlock);
        wmma::load_matrix_sync(b, sK + warp * 16 * D + dt * 16, D);
        wmma::mma_sync(acc, a, b, acc);
        wmma::store_matrix_sync(sdp, acc, 16, wmma::mem_row_major);
        __syncwarp();
        for (int e = lane; e < 256; e += 32) atomicAdd(&sdQ[(qt * 16 + e / 16) * D + dt * 16 + e % 16], sdp[e]);
        __syncwarp();
      }
    __syncthreads();
    for (int i = threadIdx.x; i < kBlock * D; i += blockDim.x) atomicAdd(&dQ[q0 + i], sdQ[i] * scale);
  }
  // dK = scale · Σ dSᵀ Q, dV = Σ Pᵀ dO: through shared memory to bf16.
  __syncthreads();
  float* out = sdQ;  // free now: 64 × D floats
  for (int dt = 0; dt < D / 16; ++dt) wmma::store_matrix_sync(out + warp * 16 * D + dt * 16, dk[dt], D, wmma::mem_row_major);
  __syncthreads();
  for (int i = threadIdx.x; i < kBlock * D; i += blockDim.x)
    dK[head + static_cast<std::size_t>(k0) * D + i] = __float2bfloat16(out[i] * scale);
  __syncthreads();
  for (int dt = 0; dt < D / 16; ++dt) wmma::store_matrix_sync(out + warp * 16 * D + dt * 16, dv[dt], D, wmma::mem_row_major);
  __syncthreads();
  for (int i = threadIdx.x; i < kBlock * D; i += blockDim.x)
    dV[head + static_cast<std::size_t>(k0) * D + i] = __float2bfloat16(out[i]);
}

__global__ void to_bf16(const float* in, bf16* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16(in[i]);
}

struct Tensors {
  DeviceBuffer<bf16> q, k, v, o, dout, dk, dv, dq;
  DeviceBuffer<float> l, dvec, dq_accum;
  Tensors(std::size_t n, std::size_t rows)
      : q(n), k(n), v(n), o(n), dout(n), dk(n), dv(n), dq(n), l(rows), dvec(rows), dq_accum(n) {}
};

template <int D>
void launch_forward(Tensors& t, std::size_t bh, int s, bool causal) {
  const dim3 grid(static_cast<unsigned>(s / kBlock), static_cast<unsigned>(bh));
  flash_forward<D><<<grid, 128, forward_smem<D>()>>>(t.q.get(), t.k.get(), t.v.get(), t.o.get(), t.l.get(), s,
                                                      1.0f / std::sqrt(static_cast<float>(D)), causal);
}

template <int D>
void launch_backward(Tensors& t, std::size_t bh, int s, bool causal) {
  const std::size_t rows = bh * static_cast<std::size_t>(s), n = rows * D;
  row_dot<D><<<static_cast<unsigned>((rows + 255) / 256), 256>>>(t.dout.get(), t.o.get(), t.dvec.get(), rows);
  PTSIM_CUDA_CHECK(cudaMemsetAsync(t.dq_accum.get(), 0, n * sizeof(float)));
  const dim3 grid(static_cast<unsigned>(s / kBlock), static_cast<unsigned>(bh));
  flash_backward<D><<<grid, 128, backward_smem<D>()>>>(t.q.get(), t.k.get(), t.v.get(), t.dout.get(), t.l.get(),
                                                        t.dvec.get(), t.dq_accum.get(), t.dk.get(), t.dv.get(), s,
                                                        1.0f / std::sqrt(static_cast<float>(D)), causal);
  to_bf16<<<1024, 256>>>(t.dq_accum.get(), t.dq.get(), n);
}

template <int D>
void prepare() {
  PTSIM_CUDA_CHECK(cudaFuncSetAttribute(flash_forward<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(forward_smem<D>())));
  PTSIM_CUDA_CHECK(cudaFuncSetAttribute(flash_backward<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(backward_smem<D>())));
}

std::vector<double> host(const DeviceBuffer<bf16>& b) {
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
  Tensors t(n, bh * s);
  random_fill(t.q.get(), n, 101, 1.0f);
  random_fill(t.k.get(), n, 102, 1.0f);
  random_fill(t.v.get(), n, 103, 1.0f);
  random_fill(t.dout.get(), n, 104, 1.0f);
  if (d == 64) {
    launch_forward<64>(t, bh, s, causal);
    launch_backward<64>(t, bh, s, causal);
  } else {
    launch_forward<128>(t, bh, s, causal);
    launch_backward<128>(t, bh, s, causal);
  }
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
  if (seq % kBlock != 0)
    throw std::runtime_error("attention: sequence length " + std::to_string(seq) + " is not a multiple of 64");
  static bool prepared = false;
  if (!prepared) {
    prepare<64>();
    prepare<128>();
    prepared = true;
  }
  const bool ok = verify(static_cast<int>(head_dim), causal);
  const std::size_t n = batch_heads * seq * head_dim;
  Tensors t(n, batch_heads * seq);
  random_fill(t.q.get(), n, 1, 1.0f);
  random_fill(t.k.get(), n, 2, 1.0f);
  random_fill(t.v.get(), n, 3, 1.0f);
  random_fill(t.dout.get(), n, 4, 1.0f);
  const int s = static_cast<int>(seq);
  const auto forward = [&] {
    head_dim == 64 ? launch_forward<64>(t, batch_heads, s, causal) : launch_forward<128>(t, batch_heads, s, causal);
  };
  const auto run = [&] {
    if (!backward) return forward();
    head_dim == 64 ? launch_backward<64>(t, batch_heads, s, causal) : launch_backward<128>(t, batch_heads, s, causal);
  };
  if (backward) forward();  // the statistics the backward pass reads
  const double f = 4.0 * double(batch_heads) * double(seq) * double(seq) * double(head_dim);
  const double tensor_bytes = double(n) * 2;
  return {"attention",
          "bf16",
          {{"batch_heads", double(batch_heads)}, {"seq_q", double(seq)}, {"seq_kv", double(seq)},
           {"head_dim", double(head_dim)}, {"causal", causal ? 1.0 : 0.0}, {"backward", backward ? 1.0 : 0.0}},
          time_repeated(method, [&] { return event_seconds(run); }),
          backward ? 2 * f : f,  // ptsim's convention (the step's model FLOPs); ptsim adds the recomputation
          backward ? 8 * tensor_bytes : 4 * tensor_bytes,
          ok};
}

}  // namespace ptsim::microbench::cuda

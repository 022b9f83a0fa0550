// ptsim's fused attention kernels (see benchmarks.hpp): FlashAttention-2's
// algorithm (Dao 2023) on WMMA tensor-core tiles — the s×s scores never leave
// shared memory, the softmax is computed online, the backward pass recomputes
// the scores. bf16 inputs, fp32 accumulation, head dims 64 and 128, sequence
// lengths multiple of 64. A reference kernel, not a tuned library: ptsim
// records which implementation it measured. The benchmark and its check
// are in attention.cu.
#include <mma.h>

#include <cmath>

#include "attention_kernels.cuh"

namespace ptsim::microbench::cuda {

namespace {

using bf16 = __nv_bfloat16;
using namespace nvcuda;
constexpr int kBlock = kAttentionBlock;  // queries (forward) or keys (backward) per thread block
constexpr int kWarps = 4;                // 16 rows each

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
__global__ void __launch_bounds__(128)
    flash_forward(const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* L, int S, float scale, bool causal) {
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
__global__ void __launch_bounds__(128)
    flash_backward(const bf16* Q, const bf16* K, const bf16* V, const bf16* dO, const float* L, const float* Dvec,
                   float* dQ, bf16* dK, bf16* dV, int S, float scale, bool causal) {
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
  for (int dt = 0; dt < D / 16; ++dt)
    wmma::store_matrix_sync(out + warp * 16 * D + dt * 16, dk[dt], D, wmma::mem_row_major);
  __syncthreads();
  for (int i = threadIdx.x; i < kBlock * D; i += blockDim.x)
    dK[head + static_cast<std::size_t>(k0) * D + i] = __float2bfloat16(out[i] * scale);
  __syncthreads();
  for (int dt = 0; dt < D / 16; ++dt)
    wmma::store_matrix_sync(out + warp * 16 * D + dt * 16, dv[dt], D, wmma::mem_row_major);
  __syncthreads();
  for (int i = threadIdx.x; i < kBlock * D; i += blockDim.x)
    dV[head + static_cast<std::size_t>(k0) * D + i] = __float2bfloat16(out[i]);
}

__global__ void to_bf16(const float* in, bf16* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16(in[i]);
}

template <int D>
void launch_forward(AttentionTensors& t, std::size_t bh, int s, bool causal) {
  const dim3 grid(static_cast<unsigned>(s / kBlock), static_cast<unsigned>(bh));
  flash_forward<D><<<grid, 128, forward_smem<D>()>>>(t.q.get(), t.k.get(), t.v.get(), t.o.get(), t.l.get(), s,
                                                     1.0f / std::sqrt(static_cast<float>(D)), causal);
}

template <int D>
void launch_backward(AttentionTensors& t, std::size_t bh, int s, bool causal) {
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

}  // namespace

void prepare_attention_kernels() {
  prepare<64>();
  prepare<128>();
}

void attention_forward(AttentionTensors& t, std::size_t batch_heads, int seq, int head_dim, bool causal) {
  head_dim == 64 ? launch_forward<64>(t, batch_heads, seq, causal) : launch_forward<128>(t, batch_heads, seq, causal);
}

void attention_backward(AttentionTensors& t, std::size_t batch_heads, int seq, int head_dim, bool causal) {
  head_dim == 64 ? launch_backward<64>(t, batch_heads, seq, causal) : launch_backward<128>(t, batch_heads, seq, causal);
}

}  // namespace ptsim::microbench::cuda

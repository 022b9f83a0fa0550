// Memory-bound kernels and copies (see benchmarks.hpp). Activations are
// bf16, Adam's state fp32, as in mixed-precision training; rows of 4096
// elements for norms, softmax and embedding rows.
#include <cmath>
#include <cstring>

#include "benchmarks.hpp"
#include "common.cuh"

namespace ptsim::microbench::cuda {

namespace {

constexpr int kRow = 4096;
constexpr int kThreads = 256;

using bf16 = __nv_bfloat16;

__global__ void triad(const bf16* x, const bf16* z, bf16* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16(__bfloat162float(x[i]) + 0.5f * __bfloat162float(z[i]));
}

__device__ float block_sum(float v, float* scratch) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0;
  for (int w = 0; w < kThreads / 32; ++w) total += scratch[w];
  __syncthreads();
  return total;
}

__device__ float block_max(float v, float* scratch) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float best = scratch[0];
  for (int w = 1; w < kThreads / 32; ++w) best = fmaxf(best, scratch[w]);
  __syncthreads();
  return best;
}

// One block per row: y = (x − mean) / sqrt(var + ε).
__global__ void layer_norm(const bf16* x, bf16* y) {
  __shared__ float scratch[kThreads / 32];
  const bf16* row = x + static_cast<std::size_t>(blockIdx.x) * kRow;
  bf16* out = y + static_cast<std::size_t>(blockIdx.x) * kRow;
  float local[kRow / kThreads];
  float sum = 0;
  for (int j = 0; j < kRow / kThreads; ++j) sum += (local[j] = __bfloat162float(row[threadIdx.x + j * kThreads]));
  const float mean = block_sum(sum, scratch) / kRow;
  float sq = 0;
  for (int j = 0; j < kRow / kThreads; ++j) sq += (local[j] - mean) * (local[j] - mean);
  const float inv = rsqrtf(block_sum(sq, scratch) / kRow + 1e-5f);
  for (int j = 0; j < kRow / kThreads; ++j) out[threadIdx.x + j * kThreads] = __float2bfloat16((local[j] - mean) * inv);
}

// One block per row: y = softmax(x).
__global__ void softmax(const bf16* x, bf16* y) {
  __shared__ float scratch[kThreads / 32];
  const bf16* row = x + static_cast<std::size_t>(blockIdx.x) * kRow;
  bf16* out = y + static_cast<std::size_t>(blockIdx.x) * kRow;
  float local[kRow / kThreads];
  float mx = -INFINITY;
  for (int j = 0; j < kRow / kThreads; ++j) mx = fmaxf(mx, local[j] = __bfloat162float(row[threadIdx.x + j * kThreads]));
  mx = block_max(mx, scratch);
  float sum = 0;
  for (int j = 0; j < kRow / kThreads; ++j) sum += (local[j] = __expf(local[j] - mx));
  const float inv = 1.0f / block_sum(sum, scratch);
  for (int j = 0; j < kRow / kThreads; ++j) out[threadIdx.x + j * kThreads] = __float2bfloat16(local[j] * inv);
}

// Adam on fp32 parameters p with gradient g and moments m, v.
__global__ void adam(const float* g, float* m, float* v, float* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float m1 = 0.9f * m[i] + 0.1f * g[i];
    const float m2 = 0.999f * v[i] + 0.001f * g[i] * g[i];
    m[i] = m1;
    v[i] = m2;
    p[i] -= 1e-3f * m1 / (sqrtf(m2) + 1e-8f);
  }
}

// One block per output row: y[r] = table[index[r]].
__global__ void gather(const bf16* table, const int* index, bf16* y) {
  const bf16* row = table + static_cast<std::size_t>(index[blockIdx.x]) * kRow;
  bf16* out = y + static_cast<std::size_t>(blockIdx.x) * kRow;
  for (int j = threadIdx.x; j < kRow; j += kThreads) out[j] = row[j];
}

int blocks_for(std::size_t n) {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return static_cast<int>(std::min<std::size_t>((n + kThreads - 1) / kThreads, static_cast<std::size_t>(sms) * 32));
}

std::vector<float> host(const DeviceBuffer<bf16>& b) {
  const auto h = b.to_host();
  std::vector<float> f(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) f[i] = __bfloat162float(h[i]);
  return f;
}

// Copies: device to device with cudaMemcpyAsync (what frameworks use), host
// to device and back between pinned host memory and the device.
Result copy(const std::string& op, std::uint64_t bytes, const Method& method) {
  const bool d2d = op == "copy";
  const std::size_t sets = d2d ? rotation_sets(2 * bytes) : 1;
  std::vector<DeviceBuffer<std::uint8_t>> src, dst;
  for (std::size_t s = 0; s < sets; ++s) {
    src.emplace_back(bytes);
    dst.emplace_back(bytes);
    random_fill(reinterpret_cast<bf16*>(src.back().get()), bytes / 2, 5 + s);
  }
  void* pinned = nullptr;
  if (!d2d) PTSIM_CUDA_CHECK(cudaMallocHost(&pinned, bytes));
  const auto run = [&](std::size_t s) {
    if (d2d) PTSIM_CUDA_CHECK(cudaMemcpyAsync(dst[s].get(), src[s].get(), bytes, cudaMemcpyDeviceToDevice));
    else if (op == "memcpy_h2d") PTSIM_CUDA_CHECK(cudaMemcpyAsync(dst[s].get(), pinned, bytes, cudaMemcpyHostToDevice));
    else PTSIM_CUDA_CHECK(cudaMemcpyAsync(pinned, src[s].get(), bytes, cudaMemcpyDeviceToHost));
  };
  if (!d2d) std::memset(pinned, 0x3c, bytes);
  run(0);
  PTSIM_CUDA_CHECK(cudaDeviceSynchronize());
  bool ok = true;
  {
    std::vector<std::uint8_t> head(std::min<std::uint64_t>(bytes, 4096)), expect(head.size());
    if (op == "memcpy_d2h") {
      PTSIM_CUDA_CHECK(cudaMemcpy(expect.data(), src[0].get(), head.size(), cudaMemcpyDeviceToHost));
      std::memcpy(head.data(), pinned, head.size());
    } else {
      PTSIM_CUDA_CHECK(cudaMemcpy(head.data(), dst[0].get(), head.size(), cudaMemcpyDeviceToHost));
      if (d2d) PTSIM_CUDA_CHECK(cudaMemcpy(expect.data(), src[0].get(), head.size(), cudaMemcpyDeviceToHost));
      else std::memset(expect.data(), 0x3c, expect.size());
    }
    ok = head == expect;
  }
  std::size_t next = 0;
  Result r{op, "bf16", {{"bytes", double(d2d ? 2 * bytes : bytes)}},
           time_repeated(method, [&] { return event_seconds([&] { run(next++ % sets); }); }), 0,
           double(d2d ? 2 * bytes : bytes), ok};
  if (pinned) cudaFreeHost(pinned);
  return r;
}

}  // namespace

Result memory(const std::string& op, std::uint64_t bytes, const Method& method) {
  if (op == "copy" || op == "memcpy_h2d" || op == "memcpy_d2h") return copy(op, bytes, method);
  // Elements per array so that the kernel reads plus writes `bytes`.
  const int arrays = op == "elementwise" ? 3 : op == "optimizer" ? 7 : 2;
  const std::size_t element = op == "optimizer" ? 4 : 2;
  std::size_t n = bytes / (static_cast<std::size_t>(arrays) * element);
  n = std::max<std::size_t>(kRow, n / kRow * kRow);
  const std::size_t rows = n / kRow;
  const std::size_t sets = rotation_sets(n * arrays * element);
  std::vector<DeviceBuffer<bf16>> x, y, z;
  std::vector<DeviceBuffer<float>> g, m, v, p;
  std::vector<DeviceBuffer<int>> index;
  for (std::size_t s = 0; s < sets; ++s) {
    if (op == "optimizer") {
      for (auto* list : {&g, &m, &v, &p}) {
        list->emplace_back(n);
        random_fill(list->back().get(), n, 11 + 5 * s + list->size());
      }
    } else {
      x.emplace_back(n);
      y.emplace_back(n);
      random_fill(x.back().get(), n, 3 + s);
      if (op == "elementwise") {
        z.emplace_back(n);
        random_fill(z.back().get(), n, 7 + s);
      }
      if (op == "embedding") {
        std::vector<int> idx(rows);
        Rng rng(23 + s);
        for (auto& i : idx) i = static_cast<int>(static_cast<std::size_t>((rng.next() + 1) / 2 * static_cast<float>(rows)) % rows);
        index.emplace_back(rows);
        PTSIM_CUDA_CHECK(cudaMemcpy(index.back().get(), idx.data(), rows * sizeof(int), cudaMemcpyHostToDevice));
      }
    }
  }
  if (op == "optimizer")  // second moments are non-negative
    for (auto& b : v) {
      auto h = b.to_host();
      for (auto& e : h) e = std::abs(e);
      PTSIM_CUDA_CHECK(cudaMemcpy(b.get(), h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
    }
  const auto run = [&](std::size_t s) {
    if (op == "elementwise") triad<<<blocks_for(n), kThreads>>>(x[s].get(), z[s].get(), y[s].get(), n);
    else if (op == "norm") layer_norm<<<static_cast<unsigned>(rows), kThreads>>>(x[s].get(), y[s].get());
    else if (op == "softmax") softmax<<<static_cast<unsigned>(rows), kThreads>>>(x[s].get(), y[s].get());
    else if (op == "optimizer") adam<<<blocks_for(n), kThreads>>>(g[s].get(), m[s].get(), v[s].get(), p[s].get(), n);
    else if (op == "embedding") gather<<<static_cast<unsigned>(rows), kThreads>>>(x[s].get(), index[s].get(), y[s].get());
    else throw std::runtime_error("memory: unknown kernel '" + op + "'");
  };

  // Reference on sampled elements from the inputs of set 0, before it runs.
  std::vector<float> hx, hz, hg, hm, hv, hp;
  std::vector<int> hidx;
  if (op == "optimizer") {
    hg = g[0].to_host();
    hm = m[0].to_host();
    hv = v[0].to_host();
    hp = p[0].to_host();
  } else {
    hx = host(x[0]);
    if (op == "elementwise") hz = host(z[0]);
    if (op == "embedding") hidx = index[0].to_host();
  }
  run(0);
  PTSIM_CUDA_CHECK(cudaDeviceSynchronize());
  PTSIM_CUDA_CHECK(cudaGetLastError());
  bool ok = true;
  const std::vector<float> out = op == "optimizer" ? p[0].to_host() : host(y[0]);
  Rng pick(31);
  for (int t = 0; t < 32; ++t) {
    const std::size_t i = static_cast<std::size_t>((pick.next() + 1) / 2 * static_cast<float>(n)) % n;
    const std::size_t r = i / kRow;
    double expect = 0;
    if (op == "elementwise") {
      expect = hx[i] + 0.5 * hz[i];
    } else if (op == "optimizer") {
      const double m1 = 0.9 * hm[i] + 0.1 * hg[i], m2 = 0.999 * hv[i] + 0.001 * hg[i] * hg[i];
      expect = hp[i] - 1e-3 * m1 / (std::sqrt(m2) + 1e-8);
    } else if (op == "embedding") {
      expect = hx[static_cast<std::size_t>(hidx[r]) * kRow + i % kRow];
    } else {
      double mean = 0, var = 0, mx = -1e30, sum = 0;
      for (int j = 0; j < kRow; ++j) {
        mean += hx[r * kRow + j];
        mx = std::max<double>(mx, hx[r * kRow + j]);
      }
      mean /= kRow;
      for (int j = 0; j < kRow; ++j) {
        var += (hx[r * kRow + j] - mean) * (hx[r * kRow + j] - mean);
        sum += std::exp(hx[r * kRow + j] - mx);
      }
      expect = op == "norm" ? (hx[i] - mean) / std::sqrt(var / kRow + 1e-5) : std::exp(hx[i] - mx) / sum;
    }
    // bf16 outputs carry 8 bits of mantissa.
    ok = ok && std::abs(out[i] - expect) <= (op == "optimizer" ? 1e-5 : 1e-2) * (1 + std::abs(expect));
  }
  std::size_t next = 0;
  const double moved = double(n) * arrays * element;
  return {op, op == "optimizer" ? "fp32" : "bf16", {{"bytes", moved}},
          time_repeated(method, [&] { return event_seconds([&] { run(next++ % sets); }); }), 0, moved, ok};
}

}  // namespace ptsim::microbench::cuda

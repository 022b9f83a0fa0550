// Random device inputs and input rotation (see common.cuh).
#include "common.cuh"

namespace ptsim::microbench::cuda {

namespace {

__device__ inline float hashed_uniform(std::uint64_t seed, std::uint64_t i) {
  // splitmix64 of (seed, index) → [-1, 1)
  std::uint64_t z = seed * 0x9e3779b97f4a7c15ULL + i + 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

template <typename T>
__global__ void fill_kernel(T* p, std::size_t n, std::uint64_t seed, float scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = T(hashed_uniform(seed, i) * scale);
}

}  // namespace

template <typename T>
void random_fill(T* p, std::size_t n, std::uint64_t seed, float scale) {
  fill_kernel<<<1024, 256>>>(p, n, seed, scale);
  PTSIM_CUDA_CHECK(cudaGetLastError());
}

template void random_fill<float>(float*, std::size_t, std::uint64_t, float);
template void random_fill<__nv_bfloat16>(__nv_bfloat16*, std::size_t, std::uint64_t, float);
template void random_fill<__half>(__half*, std::size_t, std::uint64_t, float);
template void random_fill<__nv_fp8_e4m3>(__nv_fp8_e4m3*, std::size_t, std::uint64_t, float);

std::size_t rotation_sets(std::size_t bytes) {
  int device = 0, l2 = 0;
  PTSIM_CUDA_CHECK(cudaGetDevice(&device));
  PTSIM_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  const std::size_t footprint = 2 * static_cast<std::size_t>(std::max(l2, 1 << 20));
  std::size_t sets = (footprint + bytes - 1) / std::max<std::size_t>(bytes, 1);
  sets = std::max<std::size_t>(1, std::min<std::size_t>(sets, 64));
  while (sets > 1 && sets * bytes > (std::size_t{8} << 30)) --sets;
  return sets;
}

}  // namespace ptsim::microbench::cuda

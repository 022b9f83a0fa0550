// Shared pieces of ptsim-microbench: error checks on every CUDA call, device
// buffers, random inputs generated on the device, event timing and the
// rotation of inputs past the L2 cache.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../harness.hpp"

#define PTSIM_CUDA_CHECK(call)                                                                \
  do {                                                                                        \
    const cudaError_t status_ = (call);                                                       \
    if (status_ != cudaSuccess)                                                               \
      throw std::runtime_error(std::string(#call) + " failed: " + cudaGetErrorString(status_) + \
                               " (" + __FILE__ + ":" + std::to_string(__LINE__) + ")");      \
  } while (0)

namespace ptsim::microbench::cuda {

/// Device memory for `count` elements of T, freed on scope exit.
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    PTSIM_CUDA_CHECK(cudaMalloc(&ptr_, std::max<std::size_t>(count, 1) * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(o.count_) {}
  T* get() const { return ptr_; }
  std::size_t size() const { return count_; }
  std::vector<T> to_host() const {
    std::vector<T> h(count_);
    PTSIM_CUDA_CHECK(cudaMemcpy(h.data(), ptr_, count_ * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

/// Fills p[0, n) with scale · uniform[-1, 1) from a hash of (seed, index):
/// never zeros, which some tensor cores process faster than real data.
template <typename T>
void random_fill(T* p, std::size_t n, std::uint64_t seed, float scale = 1.0f);

/// Seconds between two events around `launch()`, on the default stream.
template <typename Launch>
double event_seconds(Launch&& launch) {
  cudaEvent_t start, stop;
  PTSIM_CUDA_CHECK(cudaEventCreate(&start));
  PTSIM_CUDA_CHECK(cudaEventCreate(&stop));
  PTSIM_CUDA_CHECK(cudaEventRecord(start));
  launch();
  PTSIM_CUDA_CHECK(cudaGetLastError());
  PTSIM_CUDA_CHECK(cudaEventRecord(stop));
  PTSIM_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  PTSIM_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  PTSIM_CUDA_CHECK(cudaEventDestroy(start));
  PTSIM_CUDA_CHECK(cudaEventDestroy(stop));
  return ms * 1e-3;
}

/// How many copies of a `bytes`-sized input set to rotate through so that a
/// run never finds its inputs in L2: at least 2× the L2, at most 64 sets or
/// 8 GiB.
std::size_t rotation_sets(std::size_t bytes);

inline float to_float(float v) { return v; }
inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
inline float to_float(__half v) { return __half2float(v); }
inline float to_float(__nv_fp8_e4m3 v) { return static_cast<float>(v); }

}  // namespace ptsim::microbench::cuda

// NCCL collectives across every GPU this process sees (see benchmarks.hpp):
// one communicator per device, all-reduce, all-gather and reduce-scatter of
// bf16 data, checked against the sum (or the concatenation) they must give.
#include "benchmarks.hpp"
#include "common.cuh"

#ifdef PTSIM_HAVE_NCCL
#include <nccl.h>

#define PTSIM_NCCL_CHECK(call)                                                                  \
  do {                                                                                          \
    const ncclResult_t status_ = (call);                                                        \
    if (status_ != ncclSuccess)                                                                 \
      throw std::runtime_error(std::string(#call) + " failed: " + ncclGetErrorString(status_)); \
  } while (0)
#endif

namespace ptsim::microbench::cuda {

#ifdef PTSIM_HAVE_NCCL

namespace {

using bf16 = __nv_bfloat16;

__global__ void fill_constant(bf16* p, std::size_t n, float value) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(value);
}

}  // namespace

std::vector<Result> collectives(const std::vector<std::uint64_t>& sizes, const Method& method) {
  int devices = 0;
  PTSIM_CUDA_CHECK(cudaGetDeviceCount(&devices));
  if (devices < 2) return {};
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(devices));
  PTSIM_NCCL_CHECK(ncclCommInitAll(comms.data(), devices, nullptr));
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(devices));
  for (int d = 0; d < devices; ++d) {
    PTSIM_CUDA_CHECK(cudaSetDevice(d));
    PTSIM_CUDA_CHECK(cudaStreamCreate(&streams[static_cast<std::size_t>(d)]));
  }
  std::vector<Result> results;
  for (const std::uint64_t bytes : sizes) {
    const std::size_t count = bytes / 2;  // bf16 elements of the buffer (nccl-tests' size)
    const std::size_t per_rank = count / static_cast<std::size_t>(devices);
    std::vector<bf16*> send(static_cast<std::size_t>(devices)), recv(static_cast<std::size_t>(devices));
    for (int d = 0; d < devices; ++d) {
      PTSIM_CUDA_CHECK(cudaSetDevice(d));
      PTSIM_CUDA_CHECK(cudaMalloc(&send[static_cast<std::size_t>(d)], count * sizeof(bf16)));
      PTSIM_CUDA_CHECK(cudaMalloc(&recv[static_cast<std::size_t>(d)], count * sizeof(bf16)));
      // Rank d contributes d + 1: sums and gathers are known exactly.
      fill_constant<<<256, 256>>>(send[static_cast<std::size_t>(d)], count, static_cast<float>(d + 1));
    }
    for (const char* op : {"all_reduce", "all_gather", "reduce_scatter"}) {
      const std::string name = op;
      const auto run_all = [&] {
        PTSIM_NCCL_CHECK(ncclGroupStart());
        for (int d = 0; d < devices; ++d) {
          const auto i = static_cast<std::size_t>(d);
          if (name == "all_reduce")
            PTSIM_NCCL_CHECK(ncclAllReduce(send[i], recv[i], count, ncclBfloat16, ncclSum, comms[i], streams[i]));
          else if (name == "all_gather")
            PTSIM_NCCL_CHECK(ncclAllGather(send[i], recv[i], per_rank, ncclBfloat16, comms[i], streams[i]));
          else
            PTSIM_NCCL_CHECK(ncclReduceScatter(send[i], recv[i], per_rank, ncclBfloat16, ncclSum, comms[i], streams[i]));
        }
        PTSIM_NCCL_CHECK(ncclGroupEnd());
      };
      const auto timed = [&] {
        const auto start = std::chrono::steady_clock::now();
        run_all();
        for (int d = 0; d < devices; ++d) {
          PTSIM_CUDA_CHECK(cudaSetDevice(d));
          PTSIM_CUDA_CHECK(cudaStreamSynchronize(streams[static_cast<std::size_t>(d)]));
        }
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      };
      timed();
      // Check rank 0's result: the sum of 1..n, or rank r's block holding r + 1.
      PTSIM_CUDA_CHECK(cudaSetDevice(0));
      std::vector<bf16> out(name == "reduce_scatter" ? per_rank : (name == "all_gather" ? per_rank * devices : count));
      PTSIM_CUDA_CHECK(cudaMemcpy(out.data(), recv[0], out.size() * sizeof(bf16), cudaMemcpyDeviceToHost));
      bool ok = true;
      const float sum = devices * (devices + 1) / 2.0f;
      for (std::size_t i = 0; i < out.size(); i += std::max<std::size_t>(1, out.size() / 64)) {
        const float expect = name == "all_gather" ? static_cast<float>(i / per_rank + 1) : sum;
        ok = ok && __bfloat162float(out[i]) == expect;
      }
      results.push_back({name, "bf16", {{"ranks", double(devices)}, {"bytes", double(bytes)}},
                         time_repeated(method, timed), 0, double(bytes), ok});
    }
    for (int d = 0; d < devices; ++d) {
      PTSIM_CUDA_CHECK(cudaSetDevice(d));
      PTSIM_CUDA_CHECK(cudaFree(send[static_cast<std::size_t>(d)]));
      PTSIM_CUDA_CHECK(cudaFree(recv[static_cast<std::size_t>(d)]));
    }
  }
  for (int d = 0; d < devices; ++d) {
    PTSIM_CUDA_CHECK(cudaSetDevice(d));
    cudaStreamDestroy(streams[static_cast<std::size_t>(d)]);
    ncclCommDestroy(comms[static_cast<std::size_t>(d)]);
  }
  PTSIM_CUDA_CHECK(cudaSetDevice(0));
  return results;
}

#else

std::vector<Result> collectives(const std::vector<std::uint64_t>&, const Method&) { return {}; }

#endif

}  // namespace ptsim::microbench::cuda

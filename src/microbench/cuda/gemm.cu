// GEMMs through cuBLASLt (see benchmarks.hpp). Column-major "TN" layout, as
// cuBLASLt's FP8 path requires and as frameworks call it: A stored k×m and
// transposed, B stored k×n, D m×n; fp32 accumulation.
#include <cublasLt.h>

#include <cmath>

#include "benchmarks.hpp"
#include "common.cuh"

#define PTSIM_CUBLAS_CHECK(call)                                                              \
  do {                                                                                        \
    const cublasStatus_t status_ = (call);                                                    \
    if (status_ != CUBLAS_STATUS_SUCCESS)                                                     \
      throw std::runtime_error(std::string(#call) + " failed with cuBLAS status " +          \
                               std::to_string(static_cast<int>(status_)));                   \
  } while (0)

namespace ptsim::microbench::cuda {

namespace {

struct Types {
  cudaDataType_t input, output;
  cublasComputeType_t compute;
  std::size_t input_bytes, output_bytes;
};

Types types_of(const std::string& dtype) {
  if (dtype == "bf16") return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2};
  if (dtype == "fp16") return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2};
  if (dtype == "tf32") return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4};
  if (dtype == "fp8") return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2};
  throw std::runtime_error("gemm: unknown dtype '" + dtype + "' (bf16, fp16, tf32, fp8)");
}

void fill(void* p, const std::string& dtype, bool output, std::size_t n, std::uint64_t seed) {
  if (dtype == "tf32") return random_fill(static_cast<float*>(p), n, seed);
  if (dtype == "fp16") return random_fill(static_cast<__half*>(p), n, seed);
  if (dtype == "fp8" && !output) return random_fill(static_cast<__nv_fp8_e4m3*>(p), n, seed);
  return random_fill(static_cast<__nv_bfloat16*>(p), n, seed);
}

// Elements [first, first + n) of a device array, as doubles.
std::vector<double> host_values(const void* device, const std::string& dtype, bool output, std::size_t first,
                                std::size_t n) {
  std::vector<double> v(n);
  const auto copy = [&](auto* typed) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(typed)>>;
    std::vector<T> h(n);
    PTSIM_CUDA_CHECK(cudaMemcpy(h.data(), typed + first, n * sizeof(T), cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < n; ++i) v[i] = to_float(h[i]);
  };
  if (dtype == "tf32") copy(static_cast<const float*>(device));
  else if (dtype == "fp16") copy(static_cast<const __half*>(device));
  else if (dtype == "fp8" && !output) copy(static_cast<const __nv_fp8_e4m3*>(device));
  else copy(static_cast<const __nv_bfloat16*>(device));
  return v;
}

}  // namespace

Result gemm(const std::string& dtype, std::uint64_t m, std::uint64_t n, std::uint64_t k, std::uint64_t batch,
            const Method& method) {
  const Types t = types_of(dtype);
  const std::size_t a_elems = m * k * batch, b_elems = k * n * batch, d_elems = m * n * batch;
  const std::size_t set_bytes = (a_elems + b_elems) * t.input_bytes + d_elems * t.output_bytes;
  const std::size_t sets = rotation_sets(set_bytes);
  std::vector<DeviceBuffer<std::uint8_t>> a, b, d;
  for (std::size_t s = 0; s < sets; ++s) {
    a.emplace_back(a_elems * t.input_bytes);
    b.emplace_back(b_elems * t.input_bytes);
    d.emplace_back(d_elems * t.output_bytes);
    fill(a.back().get(), dtype, false, a_elems, 1 + 3 * s);
    fill(b.back().get(), dtype, false, b_elems, 2 + 3 * s);
  }
  cublasLtHandle_t handle;
  PTSIM_CUBLAS_CHECK(cublasLtCreate(&handle));
  cublasLtMatmulDesc_t op;
  PTSIM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, t.compute, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  PTSIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose));
  PTSIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep));
  cublasLtMatrixLayout_t la, lb, ld;
  PTSIM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la, t.input, k, m, k));
  PTSIM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, t.input, k, n, k));
  PTSIM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&ld, t.output, m, n, m));
  if (batch > 1) {
    const int count = static_cast<int>(batch);
    const std::int64_t sa = static_cast<std::int64_t>(m * k), sb = static_cast<std::int64_t>(k * n),
                       sd = static_cast<std::int64_t>(m * n);
    for (auto [layout, stride] : {std::pair{la, sa}, std::pair{lb, sb}, std::pair{ld, sd}}) {
      PTSIM_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
      PTSIM_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
  }
  const std::size_t workspace_bytes = 64u << 20;
  DeviceBuffer<std::uint8_t> workspace(workspace_bytes);
  cublasLtMatmulPreference_t preference;
  PTSIM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  PTSIM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                          &workspace_bytes, sizeof workspace_bytes));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  PTSIM_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle, op, la, lb, ld, ld, preference, 1, &heuristic, &found));
  if (found == 0) throw std::runtime_error("gemm: cuBLASLt has no algorithm for this shape and dtype");
  const float alpha = 1.0f, beta = 0.0f;
  const auto run = [&](std::size_t s) {
    PTSIM_CUBLAS_CHECK(cublasLtMatmul(handle, op, &alpha, a[s].get(), la, b[s].get(), lb, &beta, d[s].get(), ld,
                                      d[s].get(), ld, &heuristic.algo, workspace.get(), workspace_bytes, nullptr));
  };

  // Check sampled entries of set 0 (first batch) against a double-precision
  // reference: D(i, j) = Σ_p A(p, i)·B(p, j), A's column i and B's column j
  // each contiguous in the "TN" layout.
  run(0);
  PTSIM_CUDA_CHECK(cudaDeviceSynchronize());
  bool ok = true;
  {
    Rng pick(7);
    for (int sample = 0; sample < 16; ++sample) {
      const std::size_t i = static_cast<std::size_t>((pick.next() + 1) / 2 * static_cast<float>(m)) % m;
      const std::size_t j = static_cast<std::size_t>((pick.next() + 1) / 2 * static_cast<float>(n)) % n;
      const auto col_a = host_values(a[0].get(), dtype, false, i * k, k);
      const auto col_b = host_values(b[0].get(), dtype, false, j * k, k);
      const double got = host_values(d[0].get(), dtype, true, i + j * m, 1)[0];
      double ref = 0;
      for (std::size_t p = 0; p < k; ++p) ref += col_a[p] * col_b[p];
      ok = ok && std::isfinite(got) &&
           std::abs(got - ref) <= 8e-3 * std::abs(ref) + 4e-3 * std::sqrt(static_cast<double>(k));
    }
  }
  std::size_t next = 0;
  Result r{"gemm",
           dtype,
           {{"m", double(m)}, {"n", double(n)}, {"k", double(k)}, {"batch", double(batch)}},
           time_repeated(method, [&] { return event_seconds([&] { run(next++ % sets); }); }),
           2.0 * double(m) * double(n) * double(k) * double(batch),
           double(set_bytes),
           ok};
  cublasLtMatmulPreferenceDestroy(preference);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(op);
  cublasLtDestroy(handle);
  return r;
}

}  // namespace ptsim::microbench::cuda

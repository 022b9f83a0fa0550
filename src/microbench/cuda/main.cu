// ptsim-microbench: measures on the GPU the kernels ptsim's compute model
// prices — cuBLASLt GEMMs (bf16, fp16, tf32, fp8) over a grid of shapes, ptsim's
// fused attention forward and backward, the memory-bound kernels of a training
// step, device and host copies, and NCCL collectives across the GPUs present —
// and writes ptsim's measurement format (ptsim-measurements/1).
//
// Usage: ptsim-microbench --out FILE [--shapes FILE] [--quick] [--sustained SECONDS]
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "benchmarks.hpp"
#include "common.cuh"

namespace mb = ptsim::microbench;
namespace cu = ptsim::microbench::cuda;

namespace {

constexpr std::uint64_t kMiB = 1 << 20;

void describe_device(mb::Report& report) {
  int device = 0;
  PTSIM_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  PTSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int driver = 0, runtime = 0, clock_khz = 0, memory_clock_khz = 0, l2 = 0, devices = 0;
  PTSIM_CUDA_CHECK(cudaDriverGetVersion(&driver));
  PTSIM_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  PTSIM_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  PTSIM_CUDA_CHECK(cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, device));
  PTSIM_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  PTSIM_CUDA_CHECK(cudaGetDeviceCount(&devices));
  const auto version = [](int v) { return "\"" + std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10) + "\""; };
  report.device("kind", "\"gpu\"");
  report.device("name", mb::json_string(prop.name));
  report.device("sm_count", std::to_string(prop.multiProcessorCount));
  report.device("compute_capability", "\"" + std::to_string(prop.major) + "." + std::to_string(prop.minor) + "\"");
  report.device("sm_clock_mhz", std::to_string(clock_khz / 1000));
  report.device("memory_clock_mhz", std::to_string(memory_clock_khz / 1000));
  report.device("memory_bytes", std::to_string(prop.totalGlobalMem));
  report.device("l2_bytes", std::to_string(l2));
  report.device("driver_cuda_version", version(driver));
  report.device("runtime_cuda_version", version(runtime));
  report.device("gpus", std::to_string(devices));
}

std::vector<mb::Request> builtin_sweep(bool quick, bool fp8) {
  std::vector<mb::Request> r;
  // Odd counts per axis: ptsim calibrate fits every other value, the ends included.
  const std::vector<std::uint64_t> mn = quick ? std::vector<std::uint64_t>{512, 2048, 8192}
                                              : std::vector<std::uint64_t>{256, 512, 1024, 2048, 4096, 8192, 16384};
  const std::vector<std::uint64_t> ks = quick ? std::vector<std::uint64_t>{512, 2048, 8192}
                                              : std::vector<std::uint64_t>{256, 1024, 4096, 16384, 65536};
  std::vector<std::string> dtypes = {"bf16"};
  if (!quick) dtypes.insert(dtypes.end(), {"fp16", "tf32"});
  if (fp8) dtypes.push_back("fp8");
  for (const auto& d : dtypes)
    for (const auto m : mn)
      for (const auto n : mn)
        for (const auto k : ks)
          if (d != "tf32" || m * n * k <= 8192ull * 8192 * 8192)  // tf32 runs at a quarter of bf16
            r.push_back({"gemm", d, "", {m, n, k, 1}, false, false});
  for (const std::uint64_t seq : {1024, 2048, 4096, 8192})
    for (const bool causal : {true, false})
      for (const bool backward : {false, true})
        r.push_back({"attention", "bf16", "", {16384 / seq, seq, seq, 128}, causal, backward});
  for (const char* op : {"copy", "elementwise", "norm", "softmax", "optimizer", "embedding", "memcpy_h2d", "memcpy_d2h"})
    for (std::uint64_t mib = 1; mib <= (quick ? 64u : 1024u); mib *= 2) r.push_back({"memory", "", op, {mib * kMiB}, false, false});
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path, shapes_path;
  bool quick = false;
  double sustain_s = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--out" || a == "--shapes") && i + 1 < argc) {
      (a == "--out" ? out_path : shapes_path) = argv[++i];
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--sustained" && i + 1 < argc) {
      const std::string v = argv[++i];
      char* end = nullptr;
      sustain_s = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(sustain_s > 0 && sustain_s <= 600)) {
        std::cerr << "ptsim-microbench: --sustained '" << v << "' is not a number of seconds in (0, 600]; see --help\n";
        return 2;
      }
    } else if (a == "--help" || a == "-h") {
      std::cout << "Usage: ptsim-microbench --out FILE [--shapes FILE] [--quick] [--sustained SECONDS]\n\n"
                   "Measures cuBLASLt GEMMs (bf16, fp16, tf32, fp8) over a grid of shapes, ptsim's fused\n"
                   "attention forward and backward, memory-bound kernels, copies and, with two or more\n"
                   "GPUs, NCCL collectives; or the kernels listed in FILE (ptsim kernels\n"
                   "--microbench-list). Random inputs rotated past L2, warm-up, CUDA events, median of\n"
                   "many runs, every result checked against a reference. Writes ptsim-measurements/1.\n\n"
                   "  --sustained S   run each kernel back to back for S seconds before timing it, so\n"
                   "                  that it is timed at the clocks the GPU holds under continuous\n"
                   "                  load (training) rather than a short burst's boost clocks; no\n"
                   "                  collectives. Use with --shapes: S seconds per listed kernel.\n\n"
                   "Example: ptsim kernels --model M.json --hw H.json --gpus 8 --tp 8 --microbench-list k.txt\n"
                   "         ptsim-microbench --shapes k.txt --sustained 10 --out h200-sustained.json\n";
      return 0;
    } else {
      std::cerr << "ptsim-microbench: unknown argument '" << a << "'; see --help\n";
      return 2;
    }
  }
  if (out_path.empty()) {
    std::cerr << "ptsim-microbench: --out FILE is required; see --help\n";
    return 2;
  }
  try {
    mb::Report report;
    describe_device(report);
    cudaDeviceProp prop{};
    PTSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    const bool fp8 = prop.major >= 9 || (prop.major == 8 && prop.minor >= 9);
    mb::Method method;
    method.target_s = quick ? 0.02 : 0.05;
    method.sustain_s = sustain_s;
    const auto requests = shapes_path.empty() ? builtin_sweep(quick, fp8) : mb::read_requests(shapes_path);
    std::size_t done = 0;
    for (const auto& r : requests) {
      ++done;
      try {
        if (r.op == "gemm") {
          if (r.dtype == "fp8" && !fp8) continue;
          report.add(cu::gemm(r.dtype, r.dims[0], r.dims[1], r.dims[2], r.dims[3], method));
        } else if (r.op == "attention") {
          report.add(cu::attention(r.dims[0], r.dims[1], r.dims[3], r.causal, r.backward, method));
        } else {
          report.add(cu::memory(r.kind, r.dims[0], method));
        }
      } catch (const std::exception& e) {
        std::cerr << "[" << done << "/" << requests.size() << "] " << r.op << " " << r.dtype << r.kind
                  << ": skipped: " << e.what() << "\n";
        continue;
      }
      const auto& m = report.results().back();
      std::fprintf(stderr, "[%zu/%zu] %s %s %.2f us%s\n", done, requests.size(), m.op.c_str(), m.dtype.c_str(),
                   m.timing.reported_s(method) * 1e6, m.verified ? "" : "  (FAILED verification)");
    }
    if (sustain_s == 0)
      for (auto& r : cu::collectives({1 * kMiB, 16 * kMiB, 256 * kMiB, 1024 * kMiB}, method)) report.add(std::move(r));
    report.write(out_path, method);
  } catch (const std::exception& e) {
    std::cerr << "ptsim-microbench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

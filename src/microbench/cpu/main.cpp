// ptsim-microbench-cpu: the micro-benchmark harness on the CPU — OpenBLAS
// sgemm over a grid of shapes and the memory-bound kernels of a training step
// (copy, triad, layer norm, softmax, Adam, embedding gather) over sizes —
// written in ptsim's measurement format, so that measure → calibrate → check
// runs for real on a machine without a GPU (CI). Three passes over the list
// take about 60 s on two cores.
//
// Usage: ptsim-microbench-cpu --out FILE [--shapes FILE] [--passes N] [--statistic min|median]
#include <cblas.h>
#include <omp.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>
#include <thread>

#include "../harness.hpp"

namespace mb = ptsim::microbench;

namespace {

constexpr std::uint64_t kMiB = 1 << 20;

// Buffers rotated so that every run reads memory the previous runs did not
// leave in the caches (at least 8× the L2 and 32 MiB of inputs in turn).
std::size_t rotation(std::uint64_t bytes) {
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 <= 0) l2 = 2 * static_cast<long>(kMiB);
  const std::uint64_t footprint = std::max<std::uint64_t>(8 * static_cast<std::uint64_t>(l2), 32 * kMiB);
  return static_cast<std::size_t>(std::clamp<std::uint64_t>((footprint + bytes - 1) / bytes, 1, 64));
}

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  mb::Rng rng(seed);
  for (auto& x : v) x = rng.next();
  return v;
}

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// ---- GEMM -------------------------------------------------------------------

mb::Result gemm(std::uint64_t m, std::uint64_t n, std::uint64_t k, const mb::Method& method) {
  const std::size_t sets = rotation(4 * (m * k + k * n + m * n));
  std::vector<std::vector<float>> a, b, c;
  for (std::size_t s = 0; s < sets; ++s) {
    a.push_back(random_floats(m * k, 11 + s));
    b.push_back(random_floats(k * n, 97 + s));
    c.emplace_back(m * n, 0.0f);
  }
  const auto run = [&](std::size_t s) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, a[s].data(), static_cast<int>(k), b[s].data(), static_cast<int>(n),
                0.0f, c[s].data(), static_cast<int>(n));
  };
  // Check against double-precision dot products before timing.
  run(0);
  bool ok = true;
  mb::Rng pick(5);
  for (int t = 0; t < 16; ++t) {
    const auto i = static_cast<std::uint64_t>((pick.next() + 1) / 2 * static_cast<float>(m)) % m;
    const auto j = static_cast<std::uint64_t>((pick.next() + 1) / 2 * static_cast<float>(n)) % n;
    double ref = 0, scale = 0;
    for (std::uint64_t p = 0; p < k; ++p) {
      ref += static_cast<double>(a[0][i * k + p]) * b[0][p * n + j];
      scale += std::abs(static_cast<double>(a[0][i * k + p]) * b[0][p * n + j]);
    }
    ok = ok && std::abs(c[0][i * n + j] - ref) <= 1e-5 * std::sqrt(static_cast<double>(k)) * scale + 1e-6;
  }
  std::size_t next = 0;
  mb::Result r{"gemm", "fp32", {{"m", double(m)}, {"n", double(n)}, {"k", double(k)}, {"batch", 1}},
               mb::time_repeated(method, [&] { return mb::wall_seconds([&] { run(next++ % sets); }); }),
               2.0 * static_cast<double>(m * n * k), 4.0 * static_cast<double>(m * k + k * n + m * n), ok};
  return r;
}

// ---- memory-bound kernels ------------------------------------------------------

constexpr std::size_t kRow = 1024;  // row width of norm, softmax and embedding rows

struct MemoryKernel {
  const char* op;
  int arrays;  // float arrays of n elements read or written (bytes = arrays · 4n)
};

// Runs one memory-bound kernel over `total_bytes`, checks it, times it.
mb::Result memory_kernel(const std::string& op, std::uint64_t total_bytes, const mb::Method& method) {
  const int arrays = op == "copy" ? 2 : op == "elementwise" ? 3 : op == "optimizer" ? 7 : 2;
  std::size_t n = static_cast<std::size_t>(total_bytes / (4 * static_cast<std::uint64_t>(arrays)));
  n = std::max<std::size_t>(kRow, n / kRow * kRow);
  const std::size_t rows = n / kRow;
  const std::size_t sets = rotation(4ull * arrays * n);
  // Per set: x (input), y (output), z (second input / state).
  std::vector<std::vector<float>> x, y, z, w, v;
  std::vector<std::vector<std::uint32_t>> index;
  for (std::size_t s = 0; s < sets; ++s) {
    x.push_back(random_floats(n, 3 + s));
    y.emplace_back(n, 0.0f);
    if (op == "elementwise" || op == "optimizer") z.push_back(random_floats(n, 7 + s));
    if (op == "optimizer") {
      w.push_back(random_floats(n, 13 + s));
      for (auto& e : w.back()) e = std::abs(e);
      v.push_back(random_floats(n, 17 + s));
    }
    if (op == "embedding") {
      std::vector<std::uint32_t> idx(rows);
      mb::Rng rng(23 + s);
      for (auto& i : idx)
        i = static_cast<std::uint32_t>(static_cast<std::size_t>((rng.next() + 1) / 2 * static_cast<float>(rows)) % rows);
      index.push_back(std::move(idx));
    }
  }
  const auto run = [&](std::size_t s) {
    float* out = y[s].data();
    const float* in = x[s].data();
    const long nn = static_cast<long>(n), rr = static_cast<long>(rows);
    if (op == "copy") {
#pragma omp parallel for schedule(static)
      for (long i = 0; i < nn; ++i) out[i] = in[i];
    } else if (op == "elementwise") {
      const float* c = z[s].data();
#pragma omp parallel for schedule(static)
      for (long i = 0; i < nn; ++i) out[i] = in[i] + 0.5f * c[i];
    } else if (op == "optimizer") {  // Adam: p (y) updated from g (x), m (z), v (w)
      float* m1 = z[s].data();
      float* m2 = w[s].data();
      float* p = v[s].data();
#pragma omp parallel for schedule(static)
      for (long i = 0; i < nn; ++i) {
        m1[i] = 0.9f * m1[i] + 0.1f * in[i];
        m2[i] = 0.999f * m2[i] + 0.001f * in[i] * in[i];
        p[i] -= 1e-3f * m1[i] / (std::sqrt(m2[i]) + 1e-8f);
      }
    } else if (op == "norm") {
#pragma omp parallel for schedule(static)
      for (long r = 0; r < rr; ++r) {
        const float* row = in + r * static_cast<long>(kRow);
        float mean = 0, var = 0;
        for (std::size_t j = 0; j < kRow; ++j) mean += row[j];
        mean /= kRow;
        for (std::size_t j = 0; j < kRow; ++j) var += (row[j] - mean) * (row[j] - mean);
        const float inv = 1.0f / std::sqrt(var / kRow + 1e-5f);
        for (std::size_t j = 0; j < kRow; ++j) out[r * static_cast<long>(kRow) + static_cast<long>(j)] = (row[j] - mean) * inv;
      }
    } else if (op == "softmax") {
#pragma omp parallel for schedule(static)
      for (long r = 0; r < rr; ++r) {
        const float* row = in + r * static_cast<long>(kRow);
        float* o = out + r * static_cast<long>(kRow);
        float mx = row[0], sum = 0;
        for (std::size_t j = 1; j < kRow; ++j) mx = std::max(mx, row[j]);
        for (std::size_t j = 0; j < kRow; ++j) sum += (o[j] = std::exp(row[j] - mx));
        const float inv = 1.0f / sum;
        for (std::size_t j = 0; j < kRow; ++j) o[j] *= inv;
      }
    } else {  // embedding: gather rows by index
      const std::uint32_t* idx = index[s].data();
#pragma omp parallel for schedule(static)
      for (long r = 0; r < rr; ++r)
        std::memcpy(out + r * static_cast<long>(kRow), in + static_cast<long>(idx[r]) * static_cast<long>(kRow), kRow * 4);
    }
  };
  // Check one run of set 0 against scalar references on sampled elements.
  const std::vector<float> x0 = x[0];
  const std::vector<float> z0 = z.empty() ? std::vector<float>{} : z[0];
  const std::vector<float> w0 = w.empty() ? std::vector<float>{} : w[0];
  const std::vector<float> v0 = v.empty() ? std::vector<float>{} : v[0];
  run(0);
  bool ok = true;
  mb::Rng pick(31);
  for (int t = 0; t < 32; ++t) {
    const auto i = static_cast<std::size_t>((pick.next() + 1) / 2 * static_cast<float>(n)) % n;
    const std::size_t r = i / kRow;
    double expect = 0, got = y[0][i];
    if (op == "copy") {
      expect = x0[i];
    } else if (op == "elementwise") {
      expect = x0[i] + 0.5 * z0[i];
    } else if (op == "optimizer") {
      const double m1 = 0.9 * z0[i] + 0.1 * x0[i], m2 = 0.999 * w0[i] + 0.001 * x0[i] * x0[i];
      expect = v0[i] - 1e-3 * m1 / (std::sqrt(m2) + 1e-8);
      got = v[0][i];
    } else if (op == "norm" || op == "softmax") {
      double mean = 0, var = 0, mx = -1e30, sum = 0;
      for (std::size_t j = 0; j < kRow; ++j) {
        mean += x0[r * kRow + j];
        mx = std::max<double>(mx, x0[r * kRow + j]);
      }
      mean /= kRow;
      for (std::size_t j = 0; j < kRow; ++j) {
        var += (x0[r * kRow + j] - mean) * (x0[r * kRow + j] - mean);
        sum += std::exp(x0[r * kRow + j] - mx);
      }
      expect = op == "norm" ? (x0[i] - mean) / std::sqrt(var / kRow + 1e-5) : std::exp(x0[i] - mx) / sum;
    } else {
      expect = x0[static_cast<std::size_t>(index[0][r]) * kRow + i % kRow];
    }
    ok = ok && std::abs(got - expect) <= 1e-4 * (1 + std::abs(expect));
  }
  std::size_t next = 0;
  const double bytes = 4.0 * arrays * static_cast<double>(n);
  return {op, "fp32", {{"bytes", bytes}},
          mb::time_repeated(method, [&] { return mb::wall_seconds([&] { run(next++ % sets); }); }),
          0, bytes, ok};
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path, shapes_path;
  mb::Method method;
  method.target_s = 0.05;
  method.passes = 3;
  method.use_min = true;
  const auto usage_error = [](const std::string& what) {
    std::cerr << "ptsim-microbench-cpu: " << what << "; see --help\n";
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if ((a == "--out" || a == "--shapes") && has_value) {
      (a == "--out" ? out_path : shapes_path) = argv[++i];
    } else if (a == "--passes" && has_value) {
      const std::string v = argv[++i];
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 1 || n > 100)
        return usage_error("--passes '" + v + "' is not a whole number from 1 to 100");
      method.passes = static_cast<int>(n);
    } else if (a == "--statistic" && has_value) {
      const std::string v = argv[++i];
      if (v != "min" && v != "median") return usage_error("--statistic '" + v + "' is neither min nor median");
      method.use_min = v == "min";
    } else if (a == "--help" || a == "-h") {
      std::cout << "Usage: ptsim-microbench-cpu --out FILE [--shapes FILE] [--passes N] [--statistic min|median]\n\n"
                   "Measures OpenBLAS sgemm over a grid of shapes and the memory-bound kernels of a\n"
                   "training step over sizes (or the fp32 GEMMs and memory kernels listed in FILE,\n"
                   "as ptsim kernels --microbench-list writes), and writes ptsim's measurement\n"
                   "format (ptsim-measurements/1) for ptsim calibrate and ptsim check-kernels.\n\n"
                   "  --passes N          measure the whole list N times (default 3) and pool each\n"
                   "                      kernel's samples, so that a burst of interference on a\n"
                   "                      shared machine hits one pass, not the kernel\n"
                   "  --statistic S       what time_s reports: min (default; interference only adds\n"
                   "                      time) or median\n\n"
                   "Example: ptsim-microbench-cpu --out cpu.json && ptsim calibrate --measurements cpu.json \\\n"
                   "           --hw hw_profiles/cpu-host.json -o cpu-calibrated.json\n";
      return 0;
    } else if (a == "--out" || a == "--shapes" || a == "--passes" || a == "--statistic") {
      return usage_error(a + " needs a value");
    } else {
      return usage_error("unknown argument '" + a + "'");
    }
  }
  if (out_path.empty()) return usage_error("--out FILE is required");
  try {
    mb::Report report;
    report.device("kind", "\"cpu\"");
    report.device("name", mb::json_string(cpu_name()));
    report.device("cores", std::to_string(std::thread::hardware_concurrency()));
    report.device("l2_bytes", std::to_string(sysconf(_SC_LEVEL2_CACHE_SIZE)));
    report.device("blas", mb::json_string(openblas_get_config()));
    std::vector<mb::Request> requests;
    if (!shapes_path.empty()) {
      requests = mb::read_requests(shapes_path);
    } else {
      // Odd counts per axis: ptsim calibrate fits every other value, the ends included.
      const mb::GemmGrid grid{{64, 128, 256, 512, 1024}, {64, 128, 256, 512, 1024}, {64, 128, 256, 512, 1024}};
      for (const auto m : grid.m)
        for (const auto n : grid.n)
          for (const auto k : grid.k) requests.push_back({"gemm", "fp32", "", {m, n, k, 1}, false, false});
      for (const char* op : {"copy", "elementwise", "norm", "softmax", "optimizer", "embedding"})
        for (const std::uint64_t mib : {1, 2, 4, 8, 16, 32, 64, 128, 256})
          requests.push_back({"memory", "", op, {mib * kMiB}, false, false});
    }
    // Pass after pass over the whole list, so that the samples of one kernel
    // are minutes apart rather than milliseconds.
    std::vector<mb::Result> results;
    for (int pass = 1; pass <= method.passes; ++pass) {
      std::size_t done = 0, measured = 0;
      for (const auto& r : requests) {
        ++done;
        mb::Result m;
        if (r.op == "gemm" && r.dtype == "fp32" && r.dims[3] == 1) {
          m = gemm(r.dims[0], r.dims[1], r.dims[2], method);
        } else if (r.op == "memory" && r.kind != "copy_h2d") {
          m = memory_kernel(r.kind, r.dims[0], method);
        } else {
          if (pass == 1) std::cerr << "skipping " << r.op << " " << r.dtype << r.kind << ": not measured on the CPU\n";
          continue;
        }
        if (pass == 1) {
          results.push_back(std::move(m));
        } else {
          mb::Result& kept = results[measured];
          kept.timing.absorb(m.timing);
          kept.verified = kept.verified && m.verified;
        }
        const mb::Result& k = results[measured++];
        std::cerr << "[pass " << pass << "/" << method.passes << "] [" << done << "/" << requests.size() << "] "
                  << k.op << " " << k.dtype << " " << k.timing.reported_s(method) * 1e6 << " us"
                  << (k.verified ? "" : "  (FAILED verification)") << "\n";
      }
    }
    for (auto& r : results) report.add(std::move(r));
    report.write(out_path, method);
  } catch (const std::exception& e) {
    std::cerr << "ptsim-microbench-cpu: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

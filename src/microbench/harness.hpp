// The measurement harness shared by ptsim-microbench (CUDA) and
// ptsim-microbench-cpu: repeated timing with warm-up and median/min/max, the
// shape lists `ptsim kernels --microbench-list` writes, random inputs, and the
// measurement file (schema "ptsim-measurements/1"). Plain C++17 with no
// dependencies, so that it builds on a GPU machine that has only a compiler,
// CMake and the CUDA toolkit.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ptsim::microbench {

/// Repetition policy: warm-up runs, then at least `min_reps` and until
/// `target_s` of measured time or `max_reps`; the whole list measured
/// `passes` times, its samples pooled per kernel; `statistic` is what
/// time_s reports: the median (GPU: CUDA events are steady) or the minimum
/// (a shared virtual CPU, where interference only ever adds time and the
/// median moved by 11 % between two runs where the minimum moved by 7 %).
/// `sustain_s` > 0: before its timed runs, each kernel runs back to back for
/// that many seconds of its own measured time, so that a GPU is timed at the
/// clocks it holds under continuous load (power and thermal limits), as in
/// hours of training, rather than at the boost clocks of a short burst.
struct Method {
  int warmup = 3;
  int min_reps = 5;
  int max_reps = 100;
  double target_s = 0.2;
  double sustain_s = 0;
  int passes = 1;
  bool use_min = false;
  const char* statistic() const { return use_min ? "min" : "median"; }
};

/// The samples of one kernel and their summary.
struct Timing {
  double median_s = 0;
  double min_s = 0;
  double max_s = 0;
  int reps = 0;
  std::vector<double> samples;

  /// Pools another pass's samples into this one and summarizes again.
  void absorb(const Timing& other) {
    samples.insert(samples.end(), other.samples.begin(), other.samples.end());
    summarize();
  }
  void summarize() {
    std::sort(samples.begin(), samples.end());
    const std::size_t n = samples.size();
    if (n == 0) return;
    median_s = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
    min_s = samples.front();
    max_s = samples.back();
    reps = static_cast<int>(n);
  }
  double reported_s(const Method& method) const { return method.use_min ? min_s : median_s; }
};

/// Times `once()` (which returns the seconds one run took) under `method`.
template <typename Once>
Timing time_repeated(const Method& method, Once&& once) {
  for (int i = 0; i < method.warmup; ++i) once();
  for (double busy = 0; busy < method.sustain_s;) busy += std::max(once(), 1e-7);  // a zero reading still counts
  Timing t;
  double total = 0;
  while (static_cast<int>(t.samples.size()) < method.min_reps ||
         (total < method.target_s && static_cast<int>(t.samples.size()) < method.max_reps)) {
    const double s = once();
    t.samples.push_back(s);
    total += s;
  }
  t.summarize();
  return t;
}

/// Wall-clock seconds of one call of f (CPU kernels).
template <typename F>
double wall_seconds(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Deterministic pseudo-random inputs in [-1, 1) (xorshift64*): never zeros,
/// which run faster on some hardware than real data.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed ? seed : 0x9e3779b97f4a7c15ULL) {}
  float next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    const std::uint64_t x = state_ * 0x2545F4914F6CDD1DULL;
    return static_cast<float>(static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }

 private:
  std::uint64_t state_;
};

/// One requested kernel, as `ptsim kernels --microbench-list` writes them:
///   gemm DTYPE M N K BATCH
///   attention DTYPE BATCH_HEADS SEQ_Q SEQ_KV HEAD_DIM causal|full forward|backward
///   memory CLASS BYTES
struct Request {
  std::string op;     // gemm, attention, memory
  std::string dtype;  // gemm, attention
  std::string kind;   // memory: the kernel class
  std::vector<std::uint64_t> dims;
  bool causal = false;
  bool backward = false;
};

inline std::vector<Request> read_requests(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open the shape list");
  std::vector<Request> out;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    Request r;
    words >> r.op;
    const auto fail = [&] {
      throw std::runtime_error(path + ":" + std::to_string(number) + ": cannot read '" + line +
                               "'; expected 'gemm DTYPE M N K BATCH', 'attention DTYPE BH SQ SKV D "
                               "causal|full forward|backward' or 'memory CLASS BYTES'");
    };
    std::uint64_t v = 0;
    if (r.op == "gemm") {
      words >> r.dtype;
      for (int i = 0; i < 4 && words >> v; ++i) r.dims.push_back(v);
      if (r.dims.size() != 4) fail();
    } else if (r.op == "attention") {
      std::string mask, pass;
      words >> r.dtype;
      for (int i = 0; i < 4 && words >> v; ++i) r.dims.push_back(v);
      words >> mask >> pass;
      if (r.dims.size() != 4 || (mask != "causal" && mask != "full") || (pass != "forward" && pass != "backward")) fail();
      r.causal = mask == "causal";
      r.backward = pass == "backward";
    } else if (r.op == "memory") {
      words >> r.kind;
      if (!(words >> v)) fail();
      r.dims.push_back(v);
    } else {
      fail();
    }
    out.push_back(r);
  }
  return out;
}

/// One measured kernel of the output file.
struct Result {
  std::string op;
  std::string dtype;
  std::vector<std::pair<std::string, double>> shape;
  Timing timing;
  double flops = 0;
  double bytes = 0;
  bool verified = false;
};

inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

inline std::string json_number(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

inline std::string iso_date_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

/// The measurement file: device facts as (key, JSON value) pairs, the method
/// and the kernels.
class Report {
 public:
  void device(const std::string& key, const std::string& json_value) { device_.emplace_back(key, json_value); }
  void add(Result r) { results_.push_back(std::move(r)); }
  const std::vector<Result>& results() const { return results_; }

  void write(const std::string& path, const Method& method) const {
    std::ostringstream o;
    o << "{\n  \"schema\": \"ptsim-measurements/1\",\n  \"device\": {";
    for (std::size_t i = 0; i < device_.size(); ++i)
      o << (i ? ", " : "") << json_string(device_[i].first) << ": " << device_[i].second;
    o << "},\n  \"date\": " << json_string(iso_date_utc()) << ",\n";
    o << "  \"method\": {\"warmup\": " << method.warmup << ", \"min_reps\": " << method.min_reps
      << ", \"max_reps\": " << method.max_reps << ", \"target_s\": " << json_number(method.target_s)
      << ", \"sustain_s\": " << json_number(method.sustain_s) << ", \"passes\": " << method.passes
      << ", \"statistic\": " << json_string(method.statistic()) << ", \"inputs\": \"random, rotated past the last-level cache\"},\n";
    o << "  \"kernels\": [";
    for (std::size_t i = 0; i < results_.size(); ++i) {
      const Result& r = results_[i];
      o << (i ? ",\n" : "\n") << "    {\"op\": " << json_string(r.op) << ", \"dtype\": " << json_string(r.dtype)
        << ", \"shape\": {";
      for (std::size_t j = 0; j < r.shape.size(); ++j)
        o << (j ? ", " : "") << json_string(r.shape[j].first) << ": " << json_number(r.shape[j].second);
      o << "}, \"time_s\": " << json_number(r.timing.reported_s(method)) << ", \"min_s\": " << json_number(r.timing.min_s)
        << ", \"max_s\": " << json_number(r.timing.max_s) << ", \"flops\": " << json_number(r.flops)
        << ", \"bytes\": " << json_number(r.bytes) << ", \"verified\": " << (r.verified ? "true" : "false") << "}";
    }
    o << "\n  ]\n}\n";
    // Written whole to a temporary file, then renamed: never half a file.
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      if (!out) throw std::runtime_error(path + ": cannot write the measurement file");
      out << o.str();
      if (!out.flush()) throw std::runtime_error(path + ": writing failed");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error(path + ": cannot rename into place");
  }

 private:
  std::vector<std::pair<std::string, std::string>> device_;
  std::vector<Result> results_;
};

/// GEMM grid of the built-in sweep: every (m, n, k) of the axes.
struct GemmGrid {
  std::vector<std::uint64_t> m, n, k;
};

}  // namespace ptsim::microbench

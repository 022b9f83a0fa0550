// MeasurementSet: kernel timings measured on one device by ptsim-microbench
// (GPU) or ptsim-microbench-cpu (schema "ptsim-measurements/1"), the ground
// truth the compute model is calibrated against and checked with.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ptsim::hardware {

struct KernelMeasurement {
  std::string op;      // gemm, attention, copy, elementwise, norm, softmax, optimizer,
                       // embedding, memcpy_h2d, memcpy_d2h, all_reduce, all_gather, reduce_scatter
  std::string dtype;   // bf16, fp16, tf32, fp32, fp8
  /// Named dimensions: gemm m, n, k, batch; attention batch_heads, seq_q,
  /// seq_kv, head_dim, causal (0/1), backward (0/1); memory kernels bytes;
  /// collectives ranks, bytes.
  std::map<std::string, double> shape;
  double time_s = 0;   // median
  double min_s = 0;
  double max_s = 0;
  double flops = 0;    // model convention (attention: 4·bh·s²·d forward, twice that backward)
  double bytes = 0;    // HBM (or DRAM) bytes read plus written
  bool verified = false;
};

struct MeasurementSet {
  std::string file;       // where it was read from
  std::string device;     // device name
  std::string kind;       // gpu or cpu
  std::string date;       // ISO 8601
  /// Seconds each kernel ran back to back before it was timed (method.sustain_s;
  /// 0: a burst measurement, as short benchmarks take).
  double sustain_s = 0;
  std::map<std::string, std::string> environment;  // driver, runtime, clocks, host, …
  std::vector<KernelMeasurement> kernels;
};

}  // namespace ptsim::hardware

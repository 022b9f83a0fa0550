// Compute cost: the time a kernel takes on one GPU, from its class —
//   GEMM        gemm_model.hpp (quantized achievable peak, or calibrated)
//   attention   executed FLOP / (bf16 peak · attention efficiency), or its bytes
//               if slower; executed FLOP are the model's count halved under a
//               causal mask (blocks above the diagonal are skipped) and ×1.25
//               backward (FlashAttention-2 recomputes the scores: 5 matmuls
//               against the model count's 4; Dao 2023 §3.2); the efficiency
//               times the profile's factor for the sequence length and mask
//               where it has one
//   SSD scan    its bytes at HBM's rate, or at the SMs' issue rate where that
//               is slower (ssd_scan_issue_seconds)
//   others      bytes / (HBM · memory efficiency of its class)
// plus the per-kernel launch overhead (already inside a calibrated GEMM
// table's measured times). Calibrated figures, when the profile has them,
// replace the datasheet-based ones. Under Load::Sustained — a training step —
// tensor-core work runs at the profile's sustained fraction of those rates
// and bytes at its sustained memory fraction (hardware_profile.hpp,
// SustainedRates); Load::Burst is what a short micro-benchmark sees. Pure
// functions.
#pragma once

#include "ptsim/common/time.hpp"
#include "ptsim/cost/load.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/taskgraph/task.hpp"

namespace ptsim::cost {

/// Seconds a compute task takes on the profile's GPU under `load`.
double compute_seconds(const hardware::HardwareProfile& hw, const taskgraph::Task& task, Load load);

/// FLOP a fused attention kernel executes for a task of the model's count:
/// halved under a causal mask, ×1.25 backward (see above).
double attention_executed_flops(const taskgraph::Task& task);

/// A fused attention kernel's efficiency factor at a sequence length, pass
/// and mask: interpolated in log2 of the length, held at the table's ends.
double attention_sequence_factor(const hardware::AttentionSequenceFactors& factors, bool backward, bool causal,
                                 double seq);

/// The causal length whose attention visits, on average, as many key tiles
/// per 128-row query tile as a sliding window of `window` keys does:
/// window/128 + 1 = (length/128 + 1)/2, so 2·window + 128.
double sliding_window_equivalent_length(double window);

/// Efficiency (fraction of its peak) of an attention kernel under a sliding
/// window of `window` keys: the kernel's measured table up to its
/// largest window; above it, interpolated in log2 of the window toward
/// `causal_efficiency` (the kernel's causal figure at the tile-equivalent
/// length), reached where that length enters the kernel's by-length table
/// (whose shortest length is `shortest_length`), and that figure beyond.
double sliding_window_efficiency(const hardware::SlidingWindowAttention& table, bool backward, double window,
                                 double causal_efficiency, double shortest_length);

/// Bytes of a Mamba-2 layer's SSD work (as src/workload/layer_mamba.cpp
/// counts them) that one SM retires per clock cycle in mamba_ssm's Triton
/// SSD kernels. These kernels are bound by their SMs' issue (the decay
/// exponentials of each chunk's Q×Q block, small-tile products, fp32 state
/// updates), not by HBM: TileLang's H800 benchmark (tile-ai/tilelang
/// benchmark/mamba2 at a35008a4) times Triton's chunk_scan at 90-110 TFLOP/s,
/// its bytes at about a third of HBM's rate, and TileOPs' NCU-backed PR #1646
/// calls it compute-bound on those exponentials. So their rate follows the
/// SMs (count × clock), not the HBM bandwidth, from one GPU to the next.
/// The figure is the one measurement of the whole forward: vLLM PR #27299,
/// one H100 (132 SMs at 1,980 MHz), 8,192 tokens of granite-4.0-h-small's
/// mixer (128 heads of 64, one group, state 128) in chunks of 128 as
/// Megatron's (the benchmark script's default for the original kernels,
/// the PR's first table), 649 µs for the five forward kernels less their
/// five launches (the H100 profile's 2.4 µs each), whose bytes
/// layer_mamba.cpp counts at 1,788,870,656 (tests/workload/hybrid_test.cpp
/// holds both): 10.74 bytes a cycle, an H100's 2.81 TB/s. Assumed for the
/// backward's kernels too (none measured).
inline constexpr double kSsdScanBytesPerSmCycle = 1788870656.0 / ((649e-6 - 5 * 2.4e-6) * 132 * 1980e6);

/// Seconds the SMs take to issue an SSD kernel of `bytes` (see above), at
/// the profile's SM count and boost clock (these kernels draw far less
/// power than a GEMM, so no power-limit derate).
double ssd_scan_issue_seconds(const hardware::HardwareProfile& hw, double bytes);

/// The bytes a second a kernel of `kernel`'s class moving `bytes` reaches
/// through HBM under `load`: the profile's bandwidth at the class's memory
/// efficiency, derated by the sustained memory fraction unless a sustained
/// calibration already measured it.
double memory_bytes_per_s(const hardware::HardwareProfile& hw, taskgraph::KernelClass kernel, double bytes, Load load);

/// compute_seconds rounded to integer simulated time, under sustained load.
Time compute_time(const hardware::HardwareProfile& hw, const taskgraph::Task& task);

/// The launch overhead the profile's calibration fitted, or its datasheet one.
double launch_overhead_seconds(const hardware::HardwareProfile& hw);

/// The memory efficiency of a kernel class moving `bytes`: calibrated
/// (interpolated in log2 bytes, clamped to the measured sizes), or the profile's.
double memory_efficiency(const hardware::HardwareProfile& hw, taskgraph::KernelClass kernel, double bytes);

}  // namespace ptsim::cost

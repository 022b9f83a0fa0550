// Compute cost: the time a kernel takes on one GPU, from its class —
//   GEMM        gemm_model.hpp (quantized achievable peak, or calibrated)
//   attention   executed FLOP / (bf16 peak · attention efficiency), or its bytes
//               if slower; executed FLOP are the model's count halved under a
//               causal mask (blocks above the diagonal are skipped) and ×1.25
//               backward (FlashAttention-2 recomputes the scores: 5 matmuls
//               against the model count's 4; Dao 2023 §3.2); the efficiency
//               times the profile's factor for the sequence length and mask
//               where it has one
//   SSD scan    its bytes at HBM's rate, or its FLOPs at the SMs' issue rate
//               where that is slower (ssd_scan_issue_seconds)
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

/// FLOPs of a Mamba-2 layer's SSD products (as src/workload/layer_mamba.cpp
/// counts them: the chunks' small-tile products, Bᵀ·x, C·Bᵀ, C·states and
/// (C·Bᵀ∘L)·x, and their gradients) that one SM retires per clock cycle in
/// mamba_ssm's Triton SSD kernels, in the forward's kernels and in the
/// backward's. These kernels are bound by their SMs' issue (the decay
/// exponentials of each chunk's Q×Q block, the small-tile products, fp32
/// state updates), not by HBM: TileLang's H800 benchmark (tile-ai/tilelang
/// benchmark/mamba2 at a35008a4) times Triton's chunk_scan with its bytes at
/// about a third of HBM's rate, and TileOPs' NCU-backed PR #1646 calls it
/// bound by those exponentials; so their rate follows the SMs (count ×
/// clock) from one GPU to the next, not the HBM bandwidth. Their work
/// follows their FLOPs, not their bytes: over the four measured
/// configurations below the forward's rate per FLOP spans 227-305 a cycle
/// where its rate per counted byte spans 4.3-11.6 (heads per group and
/// chunk length move the bytes, not the work).
///
/// Measured: the function Megatron-Core's MambaMixer trains with,
/// mamba_ssm's mamba_split_conv1d_scan_combined, timed forward and forward
/// plus backward on an H100 (132 SMs at 1,980 MHz) in bf16 by NX-AI's
/// mlstm_kernels benchmark for the TFLA paper (arXiv 2503.14376; results
/// notebooks/plots_mlstm_kernel_benchmark_tfla_paper/
/// mlstm_tfla_paper_consttoken_benchmark_results_rerun.p, commit 0172609,
/// configuration scripts/run_training_kernel_benchmarks.py
/// consttoken_benchmark_mamba): 65,536 tokens (8 × 8,192), 128 heads of 64,
/// one group, state 64, chunks of 256: 7.074272 ms forward, 44.375969 ms
/// forward and backward. Forward: its FLOPs, 414.46 G, over its time less
/// the convolution and the zero-FLOP kernels at the H100 profile's HBM rate
/// (3.35 TB/s at 0.9: 1.1075 ms) and six launches of 2.4 µs: 266.4 a cycle
/// (69.6 TFLOP/s). Backward (37.301697 ms): less the benchmark's own
/// kernels at HBM's rate (its loss, sum(out), reads the output, whose
/// broadcast gradient mamba_ssm makes contiguous; the fp32 input's
/// gradient is cast from bf16: 2.8825 ms), the convolution's recompute and
/// backward and the zero-FLOP kernels (4.5463 ms), the recomputed C·Bᵀ and
/// states at the forward's rate (1.0178 ms) and 24 launches: its 1,103.81
/// G FLOPs at 146.7 a cycle (38.3 TFLOP/s). tests/workload/hybrid_test.cpp
/// holds ptsim to both times. Checks in the same run: 64 heads, forward
/// 2% and backward 24% slower than these rates; mamba_chunk_scan_combined
/// alone with a group a head, 12% and 6% slower; vLLM PR #27299's forward
/// of its own copy of the kernels (granite-4.0-h-small's mixer, 8,192
/// tokens, 649 µs) 43% faster.
inline constexpr double kSsdScanForwardFlopsPerSmCycle = 266.4;
inline constexpr double kSsdScanBackwardFlopsPerSmCycle = 146.7;

/// Seconds the SMs take to issue an SSD kernel of `flops` (see above), a
/// backward kernel's at the backward's rate, at the profile's SM count and
/// boost clock (these kernels draw far less power than a GEMM, so no
/// power-limit derate).
double ssd_scan_issue_seconds(const hardware::HardwareProfile& hw, double flops, bool backward);

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

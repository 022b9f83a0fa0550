// HardwareProfile: on what the model is trained — one GPU's rates and memory,
// the node, the NVLink domain, the NICs and the fabric between nodes. SI units
// throughout; the loader (config/) converts the file's GB/s, µs and GiB once.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ptsim/common/dtype.hpp"

namespace ptsim::hardware {

/// How a fused attention kernel's efficiency moves with the sequence length
/// and the causal mask, as factors on the profile's efficiency for that
/// kernel and pass (which is measured at 16k tokens without a mask): one
/// table per pass, interpolated in log2 of the sequence length and held at
/// its ends (cost/compute_cost.cpp).
struct AttentionSequenceTable {
  std::vector<double> log2_seq;  // ascending
  std::vector<double> full;      // factor without a mask, one per length
  std::vector<double> causal;    // factor with the causal mask
};

struct AttentionSequenceFactors {
  AttentionSequenceTable forward;
  AttentionSequenceTable backward;
};

/// A kernel's by-length tables measured at another head shape than the one
/// its efficiency was (Llama's: query, key and value heads of 128), as
/// factors on that same efficiency, for tasks of this shape only: keyed by
/// the query/key head dim, with the measurement's value head dim.
struct AttentionHeadShape {
  int value_head_dim = 0;
  AttentionSequenceFactors factors;
};
using AttentionHeadShapes = std::map<int, AttentionHeadShape>;

/// Sliding-window attention as a kernel runs it, where measured: fractions
/// of the kernel's peak (FLOPs of the unmasked band) by window, interpolated
/// in log2 of the window and held below the smallest; above the largest,
/// toward the kernel's causal figure at the window's tile-equivalent length
/// (cost/compute_cost.cpp).
struct SlidingWindowAttention {
  std::vector<double> log2_window;  // ascending
  std::vector<double> forward;
  std::vector<double> backward;
};

/// A fused attention kernel other than the profile's default flash one, at
/// its own measured efficiencies: fractions of the bf16 peak (of its own
/// format's for FP8 kernels) at 16k tokens without a mask, and where
/// measured, by sequence length and mask and under sliding windows.
struct AttentionKernel {
  double forward = 0;
  double backward = 0;
  std::optional<AttentionSequenceFactors> by_sequence;
  std::optional<SlidingWindowAttention> sliding_window;
  AttentionHeadShapes by_head_dim;
  double efficiency(bool backward_pass) const { return backward_pass ? backward : forward; }
};

/// What a GPU keeps of its burst rates through a training step. A short
/// micro-benchmark (and every GEMM table and efficiency above it) runs at
/// boost clock; seconds of continuous tensor-core load reach the board's
/// power limit and the SM clock drops (docs/hardware-sources.md, "Sustained
/// rates"). Fractions of burst throughput, at most 1.
struct SustainedRates {
  /// Tensor-core throughput per dtype (GEMMs and fused attention); dtypes
  /// without a figure use bf16's.
  std::array<std::optional<double>, kNumDtypes> tensor{};
  double memory = 1;  // memory-bound kernels and the bytes of any kernel
  /// The physics that sets them, as documented by the profile's sources;
  /// informative, not used in the arithmetic.
  std::optional<double> board_power_w;
  /// The part's highest board limit (its default, TDP), where the profile
  /// runs below it; absent: board_power_w. What --power-limit-w scales from.
  std::optional<double> max_power_w;
  std::optional<double> boost_clock_mhz;
  std::optional<double> sustained_clock_mhz;

  double tensor_for(Dtype d) const;
};

struct GpuSpec {
  std::string name;
  /// Bytes a second a copy engine moves between this GPU's memory and its
  /// host's, each way, while every GPU of the node does the same (activation
  /// offload); unknown where the profile gives none.
  std::optional<double> host_link_bytes_per_s;
  /// Dense peak FLOP/s per dtype; empty where the GPU has no such unit.
  std::array<std::optional<double>, kNumDtypes> peak_flops_per_s{};
  double memory_bytes = 0;                 // usable HBM capacity
  double memory_bandwidth_bytes_per_s = 0; // HBM peak
  int sm_count = 0;
  /// Achievable fraction of each dtype's peak for large, well-shaped GEMMs;
  /// dtypes without a figure use bf16's.
  std::array<std::optional<double>, kNumDtypes> gemm_efficiency{};
  double memory_efficiency = 0;  // achievable fraction of HBM peak for streaming kernels
  double attention_forward_efficiency = 0;   // fused attention, fraction of the bf16 peak
  double attention_backward_efficiency = 0;
  /// Where measured: the two efficiencies above by sequence length and mask.
  std::optional<AttentionSequenceFactors> flash_attention_by_sequence;
  /// Where measured: the flash kernel's efficiency under a sliding window.
  std::optional<SlidingWindowAttention> sliding_window_attention;
  /// Where measured: the flash kernel's tables at other head shapes.
  AttentionHeadShapes flash_attention_by_head_dim;
  /// Transformer Engine's FP8 fused attention (cuDNN's kernel) with
  /// per-tensor scales and with MXFP8 blocks, where measured; fractions of
  /// the fp8 and mxfp8 peaks. --fp8-dot-product-attention needs the format's.
  std::optional<AttentionKernel> fp8_attention;
  std::optional<AttentionKernel> mxfp8_attention;
  /// cuDNN's fused attention (what Transformer Engine runs on Hopper), where
  /// it was measured; --attention-backend cudnn needs it.
  std::optional<AttentionKernel> cudnn_attention;
  /// FlashAttention-2 (PyTorch's bundled flash kernel), where it was
  /// measured; --attention-backend flash2 needs it.
  std::optional<AttentionKernel> flash2_attention;
  /// FlashAttention's Triton kernel (llm-foundry's attn_impl: triton), where
  /// it was measured; --attention-backend triton needs it.
  std::optional<AttentionKernel> triton_attention;
  /// Token-level sparse attention (DeepSeek's sparse MLA prefill kernels,
  /// one key/value head gathered per query), where measured; DeepSeek-V4's
  /// compressed attention needs it. Fractions of the bf16 peak.
  std::optional<AttentionKernel> sparse_mla_attention;
  double kernel_launch_overhead_s = 0;  // added to every kernel
  /// Kernels take (1 + this) times longer while a communication kernel runs
  /// on the same GPU (NCCL occupies SMs and HBM bandwidth).
  double comm_compute_slowdown = 0;
  /// Rates under sustained load; absent, a step runs at the burst rates.
  std::optional<SustainedRates> sustained;
  /// CUDA compute capability (9.0 Hopper, 10.0 B200, 10.3 B300), where the
  /// software's choices depend on it; absent for a GPU that has none.
  std::optional<double> compute_capability;
  /// FP8 GEMMs take their operands in any layout, so a per-tensor FP8 copy
  /// serves a GEMM both ways and needs no transpose: Transformer Engine's
  /// is_non_tn_fp8_gemm_supported (utils.py at d0067d0da6), compute
  /// capability 10.x or 13 and later. Hopper's FP8 GEMMs are TN only.
  bool fp8_gemm_any_layout() const {
    return compute_capability &&
           ((*compute_capability >= 10.0 && *compute_capability < 12.0) || *compute_capability >= 13.0);
  }

  double peak_flops(Dtype d) const;  // throws ConfigError when the GPU lacks it
  double gemm_efficiency_for(Dtype d) const;
};

/// A GEMM efficiency table fitted to measurements: on a grid of log2 m, n, k,
/// the ratio of measured to analytic time (cost/gemm_model.hpp).
struct GemmTable {
  std::vector<double> log2_m, log2_n, log2_k;  // ascending
  std::vector<double> ratio;                   // [im · |n| · |k| + in · |k| + ik]
};

/// Memory-bound efficiency fitted to measurements of one kernel class: the
/// achieved fraction of the profile's bandwidth at each measured size
/// (caches make it depend on the size), interpolated in log2 bytes.
struct MemoryTable {
  std::vector<double> log2_bytes;  // ascending
  std::vector<double> efficiency;  // relative to memory_bandwidth; above 1 when caches serve it
};

/// How a calibration's GEMM tables were fitted, which also says which half of
/// the measurements they were fitted on (calibrate/fit.hpp).
enum class GemmFit : std::uint8_t {
  Grid,     // a table over the grid of measured m, n, k
  Scalar,   // one ratio per dtype: GEMMs measured at scattered shapes
};

/// What `ptsim calibrate` fitted, and from which measurements.
struct Calibration {
  std::string measurements;  // the measurement file
  std::string device;        // as the file names it
  std::string date;          // of the measurements
  /// Seconds of continuous load before each measured kernel (the file's
  /// method.sustain_s): above 0 the fitted tables are sustained rates, and
  /// the profile's sustained fractions are not applied to them again.
  double sustain_s = 0;
  GemmFit gemm_fit = GemmFit::Grid;
  std::map<std::string, GemmTable> gemm;               // by dtype name (a 1×1×1 table under GemmFit::Scalar)
  std::map<std::string, MemoryTable> memory;           // by kernel class name
  std::optional<double> kernel_launch_overhead_s;
  std::optional<double> attention_forward_efficiency;
  std::optional<double> attention_backward_efficiency;
};

/// What `ptsim fit` fitted into a profile, and on what (its "fit" block).
struct FittedParameter {
  std::string name;    // a fit parameter, e.g. "sustained.tensor.bf16"
  double value = 0;    // in the profile's unit
  std::optional<double> standard_error;  // absent when the data cannot give one
  std::vector<std::string> pinned_by;    // the runs or log points most sensitive to it
  bool at_bound = false;
};

struct RefusedParameter {
  std::string name;
  std::string why;
};

struct FitRecord {
  std::string method;               // "step times" or "nccl-tests"
  std::vector<std::string> inputs;  // the run file, or the nccl-tests logs
  std::vector<std::string> points;  // run ids, or log points (log: op ranks size)
  std::vector<FittedParameter> parameters;
  std::vector<RefusedParameter> refused;
  double median_abs_error_before_pct = 0, max_abs_error_before_pct = 0;
  double median_abs_error_after_pct = 0, max_abs_error_after_pct = 0;
};

/// An expert-parallel exchange library's token exchange as measured, with
/// `sms` SMs each way: algorithm bandwidth by the number of members
/// exchanging, interpolated in that number and held at the table's ends
/// (cost/expert_exchange.cpp). Inside one NVLink domain the members are EP
/// ranks and the bytes those of the tokens a rank receives, one copy a token,
/// its own included; across NVLink domains the members are the domains and
/// the bytes those of the tokens a rank sends to each domain holding one of
/// their experts, one copy a domain, its own included (DeepEP's convention,
/// which HybridEP's tests keep), over the kernel's time.
struct ExpertExchangeTable {
  int sms = 0;
  std::vector<double> members;  // ascending: ranks of one domain, or domains
  std::vector<double> dispatch_bytes_per_s;
  std::vector<double> combine_bytes_per_s;
};

/// GPUs of one NVLink domain (a DGX node, an NVL72 rack) reach each other
/// through NVSwitch at full per-GPU bandwidth.
struct NvlinkSpec {
  std::int64_t domain_gpus = 0;
  double bandwidth_bytes_per_s = 0;  // per GPU, per direction
  double latency_s = 0;              // per algorithm step
  double efficiency = 0;             // NCCL ring bus bandwidth / line rate
  std::optional<double> nvls_efficiency;  // NVLink SHARP all-reduce algbw / line rate, if any
  // Fixed time of one NVLink SHARP operation (NCCL's hwLatencies[NVLINK][NVLS],
  // 25 µs, when not measured): the intercept of an NVLS all-reduce's time.
  std::optional<double> nvls_latency_s;
  // HybridEP's kernels (DeepEP's hybrid-ep branch) and DeepEP's, where
  // measured; without a table a flex exchange moves at the links' rate.
  std::optional<ExpertExchangeTable> hybridep;
  std::optional<ExpertExchangeTable> deepep;
};

struct NicSpec {
  int per_gpu = 1;
  double bandwidth_bytes_per_s = 0;  // per NIC, per direction
  double latency_s = 0;              // per inter-node algorithm step
  double efficiency = 0;             // NCCL bus bandwidth / line rate
  // HybridEP's exchange across NVLink domains, where measured; without it a
  // flex exchange's network part moves at the NICs' rate.
  std::optional<ExpertExchangeTable> hybridep;
  double gpu_bandwidth_bytes_per_s() const { return per_gpu * bandwidth_bytes_per_s; }
};

enum class FabricTopology { RailOptimized, FatTree };

/// The network between NVLink domains: a Clos of `levels` switch levels.
/// Non-blocking inside a pod; pods connect through uplinks oversubscribed by
/// `oversubscription`.
struct FabricSpec {
  FabricTopology topology = FabricTopology::RailOptimized;
  int levels = 2;
  std::int64_t leaf_nodes = 1;   // nodes whose NICs share one leaf group
  std::int64_t pod_gpus = 0;     // GPUs per pod; 0 = the whole cluster is one pod
  double oversubscription = 1;   // ≥ 1
  double switch_latency_s = 0;   // per switch crossed
  bool in_network_reduction = false;  // the switches offer SHARP reductions
  // NCCL_COLLNET_ENABLE=1 (NCCL's default is 0): only then does NCCL run
  // CollNet on SHARP switches; needs in_network_reduction.
  bool nccl_collnet_enable = false;
};

struct HardwareProfile {
  std::string name;         // file stem, e.g. "a100-sxm4-80gb"
  std::string description;
  GpuSpec gpu;
  int gpus_per_node = 0;
  /// The node's host: CPU time the framework spends issuing each kernel or
  /// collective on it (seconds), for runs that set none (their
  /// host_overhead_us); empty: ptsim's default. What `ptsim fit` fits from
  /// a user's measured steps (host.overhead_us).
  std::optional<double> host_overhead_s;
  double collective_base_latency_s = 0;  // fixed cost of one collective call
  NvlinkSpec nvlink;
  NicSpec nic;
  FabricSpec fabric;
  std::map<std::string, std::string> sources;  // JSON pointer → where the figure comes from
  std::optional<Calibration> calibration;      // fitted by ptsim calibrate, if it was
  std::optional<FitRecord> fit;                // fitted by ptsim fit, if it was
};

std::string to_string(FabricTopology t);

}  // namespace ptsim::hardware

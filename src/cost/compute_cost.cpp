// Kernel times by class (see compute_cost.hpp).
#include "ptsim/cost/compute_cost.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "internal/interpolate.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/cost/gemm_model.hpp"

namespace ptsim::cost {

double launch_overhead_seconds(const hardware::HardwareProfile& hw) {
  if (hw.calibration && hw.calibration->kernel_launch_overhead_s)
    return *hw.calibration->kernel_launch_overhead_s;
  return hw.gpu.kernel_launch_overhead_s;
}

double memory_efficiency(const hardware::HardwareProfile& hw, taskgraph::KernelClass kernel, double bytes) {
  if (hw.calibration) {
    const auto it = hw.calibration->memory.find(std::string(taskgraph::to_string(kernel)));
    if (it != hw.calibration->memory.end()) {
      const auto& t = it->second;
      return internal::interpolate(t.log2_bytes, t.efficiency, std::log2(std::max(bytes, 1.0)));
    }
  }
  return hw.gpu.memory_efficiency;
}

namespace {

// A calibration measured under sustained load has the derate in its tables.
bool calibrated_under_sustained_load(const hardware::HardwareProfile& hw) {
  return hw.calibration && hw.calibration->sustain_s > 0;
}

}  // namespace

double memory_bytes_per_s(const hardware::HardwareProfile& hw, taskgraph::KernelClass kernel, double bytes, Load load) {
  const bool calibrated = hw.calibration && hw.calibration->memory.contains(std::string(taskgraph::to_string(kernel)));
  const double derate =
      calibrated_under_sustained_load(hw) && calibrated ? 1.0 : rate_scale(hw, Dtype::Bf16, load).memory;
  return hw.gpu.memory_bandwidth_bytes_per_s * memory_efficiency(hw, kernel, bytes) * derate;
}

double attention_sequence_factor(const hardware::AttentionSequenceFactors& factors, bool backward, bool causal,
                                 double seq) {
  const auto& t = backward ? factors.backward : factors.forward;
  return internal::interpolate(t.log2_seq, causal ? t.causal : t.full, std::log2(std::max(seq, 1.0)));
}

double sliding_window_equivalent_length(double window) {
  constexpr double kTileRows = 128;  // FlashAttention's and cuDNN's query and key tiles on Hopper and Blackwell
  return 2 * window + kTileRows;
}

double sliding_window_efficiency(const hardware::SlidingWindowAttention& table, bool backward, double window,
                                 double causal_efficiency, double shortest_length) {
  const auto& measured = backward ? table.backward : table.forward;
  const double w = std::log2(std::max(window, 1.0));
  const double largest = table.log2_window.back();
  if (w <= largest) return internal::interpolate(table.log2_window, measured, w);
  // The window whose tile-equivalent length is the table's shortest.
  const double joins = std::log2(std::max((shortest_length - sliding_window_equivalent_length(0)) / 2, 1.0));
  if (w >= joins) return causal_efficiency;
  return internal::interpolate({largest, joins}, {measured.back(), causal_efficiency}, w);
}

double ssd_scan_issue_seconds(const hardware::HardwareProfile& hw, double flops, bool backward) {
  const auto& sustained = hw.gpu.sustained;
  const std::optional<double> clock = sustained ? sustained->boost_clock_mhz : std::nullopt;
  if (hw.gpu.sm_count <= 0 || !clock)
    throw ConfigError(
        fmt::format("{}: a Mamba-2 layer's SSD kernels are priced by the SMs' issue rate, which needs "
                    "the profile's /gpu/sm_count and /gpu/sustained/boost_clock_MHz; this profile "
                    "lacks {}: add it with its source",
                    hw.name, hw.gpu.sm_count <= 0 ? "sm_count" : "boost_clock_MHz"));
  const double per_cycle = backward ? kSsdScanBackwardFlopsPerSmCycle : kSsdScanForwardFlopsPerSmCycle;
  return flops / (per_cycle * hw.gpu.sm_count * *clock * 1e6);
}

double attention_executed_flops(const taskgraph::Task& task) {
  const bool backward = task.flags & taskgraph::kBackwardPass;
  const bool causal = task.flags & taskgraph::kCausal;
  return task.flops * (causal ? 0.5 : 1.0) * (backward ? 1.25 : 1.0);
}

namespace {

// The profile's figures for an attention task's kernel when the task names
// one other than the default flash kernel (taskgraph::kCudnn, kFlash2,
// kTriton) or multiplies in FP8 (Transformer Engine's cuDNN FP8 kernel,
// whatever the backend; its figures are fractions of that format's peak).
struct OwnAttentionKernel {
  const std::optional<hardware::AttentionKernel>* kernel;
  const char* name;    // the profile's key prefix
  const char* option;  // what asks for it
  const char* what;
};

std::optional<OwnAttentionKernel> own_attention_kernel(const hardware::GpuSpec& gpu, const taskgraph::Task& task) {
  if (task.kernel == taskgraph::KernelClass::SparseAttention)
    return OwnAttentionKernel{&gpu.sparse_mla_attention, "sparse_mla", "DeepSeek-V4's compressed attention",
                              "token-level sparse attention (sparse MLA)"};
  if (task.dtype == Dtype::Fp8)
    return OwnAttentionKernel{&gpu.fp8_attention, "fp8", "--fp8-dot-product-attention", "cuDNN FP8-attention"};
  if (task.dtype == Dtype::Mxfp8)
    return OwnAttentionKernel{&gpu.mxfp8_attention, "mxfp8", "--fp8-dot-product-attention with --fp8-recipe mxfp8",
                              "cuDNN MXFP8-attention"};
  if (task.flags & taskgraph::kCudnn)
    return OwnAttentionKernel{&gpu.cudnn_attention, "cudnn", "--attention-backend cudnn", "cuDNN fused-attention"};
  if (task.flags & taskgraph::kFlash2)
    return OwnAttentionKernel{&gpu.flash2_attention, "flash2", "--attention-backend flash2", "FlashAttention-2"};
  if (task.flags & taskgraph::kTriton)
    return OwnAttentionKernel{&gpu.triton_attention, "triton", "--attention-backend triton",
                              "FlashAttention Triton-kernel"};
  return std::nullopt;
}

// The tables measured at the task's head shape, if any: its query/key head
// dim (Task::shape[3]) and its value head dim (from its FLOPs); a window
// keeps the kernel's own tables.
const hardware::AttentionHeadShape* measured_head_shape(const hardware::AttentionHeadShapes& shapes,
                                                        const taskgraph::Task& task) {
  const auto it = shapes.find(static_cast<int>(task.shape[3]));
  if (it == shapes.end() || (task.flags & taskgraph::kSlidingWindow)) return nullptr;
  return std::abs(taskgraph::attention_value_head_dim(task) - it->second.value_head_dim) < 0.5 ? &it->second : nullptr;
}

ConfigError missing_kernel(const hardware::HardwareProfile& hw, const OwnAttentionKernel& k) {
  return ConfigError(
      fmt::format("{0}: {1} needs the profile's attention_efficiency.{2}_forward and {2}_backward "
                  "(measured {3} efficiencies); this profile has none: drop {1} or add them with their "
                  "source",
                  hw.name, k.option, k.name, k.what));
}

}  // namespace

double compute_seconds(const hardware::HardwareProfile& hw, const taskgraph::Task& task, Load load) {
  using taskgraph::ComputeKind;
  const auto& gpu = hw.gpu;
  const double bytes = static_cast<double>(task.bytes);
  // A copy engine's transfer to or from host memory: the host link's rate,
  // issued as a copy is (cudaMemcpyAsync), at a kernel's launch cost.
  if (task.kernel == taskgraph::KernelClass::HostCopy) {
    if (!gpu.host_link_bytes_per_s)
      throw ConfigError(
          fmt::format("{}: activation offload needs the profile's /gpu/host_link_GBps (the bytes a "
                      "second each GPU copies to or from host memory); this profile has none: add it "
                      "with its source, or drop --fine-grained-activation-offloading",
                      hw.name));
    return bytes / *gpu.host_link_bytes_per_s + launch_overhead_seconds(hw);
  }
  const bool sustained_tables = calibrated_under_sustained_load(hw);
  const double memory_s = bytes / memory_bytes_per_s(hw, task.kernel, bytes, load);
  double s = memory_s;
  switch (task.compute) {
    case ComputeKind::Matmul:
      s = gemm_seconds(hw, task.shape[0], task.shape[1], task.shape[2], std::max<double>(1, task.shape[3]),
                       task.dtype, bytes, load);
      // A calibrated table's ratio was taken on measured times, launch included.
      if (hw.calibration && hw.calibration->gemm.contains(std::string(to_string(task.dtype)))) return s;
      break;
    case ComputeKind::Attention: {
      const bool backward = task.flags & taskgraph::kBackwardPass;
      const bool causal = task.flags & taskgraph::kCausal;
      // The benchmarks' one length is both the queries' and the keys'; a
      // context-parallel step's blocks may differ, hence their mean.
      const double seq = std::sqrt(static_cast<double>(task.shape[1]) * static_cast<double>(task.shape[2]));
      const double executed = attention_executed_flops(task);
      double efficiency = backward ? gpu.attention_backward_efficiency : gpu.attention_forward_efficiency;
      // Fused attention runs on the tensor cores in bf16, whatever the GEMMs'
      // dtype, unless the run asks for FP8 attention.
      const Dtype dtype = task.dtype == Dtype::Fp8 || task.dtype == Dtype::Mxfp8 ? task.dtype : Dtype::Bf16;
      double tensor = rate_scale(hw, dtype, load).tensor;
      const hardware::AttentionSequenceFactors* by_sequence =
          gpu.flash_attention_by_sequence ? &*gpu.flash_attention_by_sequence : nullptr;
      const hardware::SlidingWindowAttention* windows =
          gpu.sliding_window_attention ? &*gpu.sliding_window_attention : nullptr;
      const hardware::AttentionHeadShapes* head_shapes = &gpu.flash_attention_by_head_dim;
      if (const auto own = own_attention_kernel(gpu, task)) {
        // A kernel other than the profile's flash one, at its own measured
        // efficiency (calibration tables describe the kernel the
        // micro-benchmarks ran, not this one).
        const auto& kernel = *own->kernel;
        if (!kernel) throw missing_kernel(hw, *own);
        efficiency = kernel->efficiency(backward);
        by_sequence = kernel->by_sequence ? &*kernel->by_sequence : nullptr;
        windows = kernel->sliding_window ? &*kernel->sliding_window : nullptr;
        head_shapes = &kernel->by_head_dim;
      } else if (hw.calibration) {
        // A calibration measured this GPU's kernel at its own lengths; the
        // profile's factors describe the kernel the profile's figure came from.
        const auto& cal = backward ? hw.calibration->attention_backward_efficiency
                                   : hw.calibration->attention_forward_efficiency;
        if (cal) {
          efficiency = *cal;
          by_sequence = nullptr;
          windows = nullptr;
          head_shapes = nullptr;
          if (sustained_tables) tensor = 1;
        }
      }
      // A sliding window prices as causal attention over its tile-equivalent
      // length, and below the kernel's table at its measured figures.
      const bool sliding = task.flags & taskgraph::kSlidingWindow;
      const double window = static_cast<double>(task.shape[2]);
      // At a head shape the kernel was measured at, that measurement's tables
      // (the profile's efficiency and tables are another shape's).
      if (by_sequence && head_shapes)
        if (const hardware::AttentionHeadShape* shape = measured_head_shape(*head_shapes, task))
          by_sequence = &shape->factors;
      if (by_sequence)
        efficiency *=
            sliding ? attention_sequence_factor(*by_sequence, backward, true, sliding_window_equivalent_length(window))
                    : attention_sequence_factor(*by_sequence, backward, causal, seq);
      if (sliding && by_sequence && windows) {
        const auto& lengths = backward ? by_sequence->backward.log2_seq : by_sequence->forward.log2_seq;
        efficiency = sliding_window_efficiency(*windows, backward, window, efficiency, std::exp2(lengths.front()));
      }
      s = std::max(executed / (gpu.peak_flops(dtype) * efficiency * tensor), memory_s);
      break;
    }
    case ComputeKind::MemoryBound:
      if (task.kernel == taskgraph::KernelClass::StateSpaceScan)
        s = std::max(s, ssd_scan_issue_seconds(hw, task.flops, task.flags & taskgraph::kBackwardPass));
      break;
  }
  return s + launch_overhead_seconds(hw);
}

Time compute_time(const hardware::HardwareProfile& hw, const taskgraph::Task& task) {
  const double s = compute_seconds(hw, task, Load::Sustained);
  if (!(s >= 0 && s <= Time::max_seconds))
    throw ConfigError(fmt::format(
        "{}: a kernel is predicted to take {:g} s, beyond simulated time's {:g} s: the profile's "
        "rates or calibration ratios, or the model's sizes, are absurd",
        hw.name, s, Time::max_seconds));
  return Time::from_seconds(s);
}

}  // namespace ptsim::cost

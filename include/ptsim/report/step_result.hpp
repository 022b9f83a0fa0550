// StepResult: what one simulated training step came to — time and its
// breakdown, throughput, memory, communication — as plain data. Renderers
// (terminal, JSON) read it; they never re-simulate.
#pragma once

#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "ptsim/common/ids.hpp"

namespace ptsim::report {

/// Where the step's time goes on the rank that finishes last; the five parts
/// sum to the step time.
struct Breakdown {
  double compute_s = 0;                // forward, backward and recomputation kernels
  double exposed_communication_s = 0;  // compute stream idle while communication runs
  double pipeline_bubble_s = 0;        // compute stream idle with nothing in flight
  double host_issue_s = 0;             // GPU idle while a ready task waits for the host to issue it
  double optimizer_s = 0;              // optimizer step
  double recompute_s = 0;              // part of compute_s spent recomputing activations
};

struct Throughput {
  double tokens_per_s = 0;
  double model_tflops_per_gpu = 0;     // model FLOPs (no recomputation) per second per GPU
  double hardware_tflops_per_gpu = 0;  // including recomputation
  double mfu = 0;                      // model FLOPs / (step time · GPUs · dense bf16 peak)
};

struct MemoryUse {
  std::uint64_t peak_bytes = 0;          // highest peak over ranks
  std::uint64_t capacity_bytes = 0;      // HBM per GPU
  std::uint64_t headroom_bytes = 0;      // of it, what the step cannot use (CUDA context, NCCL, allocator)
  bool fits = false;
  std::uint64_t params_bytes = 0;        // of the rank with the highest peak
  std::uint64_t grads_bytes = 0;
  std::uint64_t optimizer_bytes = 0;
  std::uint64_t activations_peak_bytes = 0;
  Rank peak_rank = 0;
  std::int64_t peak_stage = 0;
};

struct StageMemory {
  std::int64_t stage = 0;
  std::uint64_t peak_bytes = 0;
  std::uint64_t static_bytes = 0;
  std::uint64_t activations_peak_bytes = 0;
  /// Where the time of the stage's first simulated rank goes (a slow stage
  /// shows here while the critical rank, often stage 0, only waits for it).
  Breakdown breakdown;
  /// Exposed communication of that rank by dimension.
  std::map<std::string, double> exposed_s;
};

/// The parallel dimensions whose communication reports name, in print order,
/// and activation offload's copies between HBM and host memory ("offload").
inline constexpr const char* kDimensions[] = {"tp", "cp", "ep", "pp", "dp", "offload"};

/// One parallel dimension's communication on the rank that finishes last.
struct DimensionCommunication {
  std::uint64_t bytes = 0;  // message sizes of its collectives, and bytes it sends and receives
  double bus_bytes = 0;     // what the rank moves, nccl-tests' bus convention (report/internal/bus_bytes.hpp)
  double time_s = 0;        // time its operations ran
  double exposed_s = 0;     // of which the compute stream sat idle waiting
};

struct SimulationInfo {
  std::uint64_t events = 0;
  std::uint64_t tasks = 0;
  // Wall-clock seconds of the simulation: set by simulate_step, kept in the
  // outputs only with --timing (it differs from run to run; the rest does not).
  std::optional<double> wall_s;
  std::string mode;         // "explicit" or "symmetric"
  std::int64_t ranks_simulated = 0;
  std::uint64_t fingerprint = 0;
};

struct StepResult {
  // What was simulated.
  std::string model_name;
  std::string hardware_name;
  std::string gpu_name;
  std::int64_t gpus = 0;
  std::int64_t nodes = 0;
  std::int64_t tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, expert_tp = 1, vpp = 1;
  bool sequence_parallel = false;
  int zero_stage = 0;
  bool megatron_fsdp = false;                // the ZeRO stage run as Megatron-FSDP
  std::int64_t optimizer_instances = 1;      // Megatron's --num-distributed-optimizer-instances
  bool outer_optimizer_sharding = false;     // Hybrid-FSDP: the optimizer split across the instances too
  std::vector<std::string> offload_modules;  // fine-grained activation offloading's modules, Megatron-Core's names
  std::string precision = "bf16";
  /// Layers first_last_layers_bf16 keeps in bf16 under fp8 or nvfp4: the model's first and last so many.
  std::int64_t bf16_layers_at_start = 0, bf16_layers_at_end = 0;
  /// Modules in a format of their own (module_precision), "MODULE=FORMAT" each.
  std::vector<std::string> module_precision;
  std::string fp8_recipe;  // delayed | tensorwise under fp8; empty under bf16
  bool fp8_attention = false;  // fused attention in FP8 too (ParallelConfig::fp8_dot_product_attention)
  std::int64_t micro_batch_size = 1;
  std::int64_t num_microbatches = 1;
  std::int64_t global_batch_size = 1;
  std::int64_t seq_length = 1;
  std::string schedule;
  std::string recompute;
  std::vector<std::string> recompute_modules;  // under selective recomputation: the modules rerun, Megatron-Core's names
  double host_overhead_s = 0;  // host time per issued task (--host-overhead-us); 0: not modelled
  std::string cuda_graph_impl = "none";         // Megatron-Core's cuda_graph_impl
  std::vector<std::string> cuda_graph_modules;  // per-layer graphs' modules (none: whole layers)
  double mean_kernel_s = 0;    // the critical rank's forward, backward and recompute kernels: time per kernel
  double model_flops_per_step = 0;
  std::int64_t parameters = 0;
  std::int64_t active_parameters = 0;  // per token (MoE: the routed experts' share)

  // What it came to.
  double step_time_s = 0;
  Rank critical_rank = 0;
  std::int64_t critical_stage = 0;
  Breakdown breakdown;
  Throughput throughput;
  MemoryUse memory;
  std::vector<StageMemory> stages;
  std::map<std::string, DimensionCommunication> communication;  // "tp", "cp", "ep", "pp", "dp"
  SimulationInfo simulation;
};

}  // namespace ptsim::report

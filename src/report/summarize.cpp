// From engine observations to the step's figures (see summarize.hpp).
#include "ptsim/report/summarize.hpp"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "internal/bus_bytes.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/model/model_spec.hpp"

namespace ptsim::report {

namespace {

using workload::categories::kBackward;
using workload::categories::kDataParallel;
using workload::categories::kForward;
using workload::categories::kOptimizer;
using workload::categories::kPipelineParallel;
using workload::categories::kRecompute;
using workload::categories::kTensorParallel;

// Time with a kernel running (compute), and the compute streams' idle time,
// split into waiting on communication (attributed in equal shares to the
// dimensions then in flight) and bubble; compute excludes the optimizer.
void split_time(const engine::RankStats& r, const taskgraph::Workload& w, Breakdown& b,
                std::map<std::string, double>& exposed) {
  const auto busy = [&](std::uint8_t c) { return r.categories[c].busy.seconds(); };
  for (const auto& [mask, time] : r.occupancy) {
    const double t = time.seconds();
    if (mask & w.compute_stream_mask) {  // a kernel runs
      b.compute_s += t;
      continue;
    }
    if (mask == 0) {
      b.pipeline_bubble_s += t;
      continue;
    }
    b.exposed_communication_s += t;
    std::vector<std::string> dims;
    for (std::size_t s = 1; s < w.stream_dimension.size(); ++s)
      if ((mask >> s) & 1u && !w.stream_dimension[s].empty() &&
          std::find(dims.begin(), dims.end(), w.stream_dimension[s]) == dims.end())
        dims.push_back(w.stream_dimension[s]);
    for (const auto& d : dims) exposed[d] += t / static_cast<double>(dims.size());
  }
  // Idle time in which a ready task waited for its host is host-bound, not
  // a bubble.
  b.host_issue_s = std::min(r.host_wait.seconds(), b.pipeline_bubble_s);
  b.pipeline_bubble_s -= b.host_issue_s;
  b.optimizer_s = busy(kOptimizer);
  b.compute_s -= b.optimizer_s;
  // Recomputation's share of compute, by task time.
  const double kernels = busy(kForward) + busy(kBackward) + busy(kRecompute);
  b.recompute_s = kernels > 0 ? busy(kRecompute) * b.compute_s / kernels : 0;
}

}  // namespace

StepResult summarize(const engine::RunResult& run, const workload::StepWorkload& step,
                     const strategy::ParallelConfig& config,
                     const hardware::HardwareProfile& hardware) {
  PTSIM_ASSERT(!run.ranks.empty(), "a run simulates at least one rank");
  StepResult out;
  out.model_name = step.model.name;
  out.hardware_name = hardware.name;
  out.gpu_name = hardware.gpu.name;
  out.gpus = config.world_size;
  out.nodes = (config.world_size + hardware.gpus_per_node - 1) / hardware.gpus_per_node;
  out.tp = config.tp;
  out.pp = config.pp;
  out.dp = config.dp;
  out.cp = config.cp;
  out.ep = config.ep;
  out.expert_tp = config.expert_tp;
  out.vpp = config.vpp;
  out.sequence_parallel = config.sequence_parallel;
  out.zero_stage = config.zero_stage;
  out.megatron_fsdp = config.megatron_fsdp;
  out.optimizer_instances = config.optimizer_instances;
  out.outer_optimizer_sharding = config.outer_optimizer_sharding;
  for (const auto& [bit, name] : strategy::kOffloadModuleNames)
    if (config.offload_modules & bit) out.offload_modules.emplace_back(name);
  out.precision = std::string(to_string(config.precision));
  out.bf16_layers_at_start = config.bf16_layers_at_start;
  out.bf16_layers_at_end = config.bf16_layers_at_end;
  for (const auto& [module, name] : strategy::kLinearModuleNames)
    if (const auto& dtype = config.module_precision[static_cast<std::size_t>(module)])
      out.module_precision.push_back(fmt::format("{}={}", name, to_string(*dtype)));
  if (config.precision == Dtype::Fp8) out.fp8_recipe = std::string(strategy::to_string(config.fp8_recipe));
  out.fp8_attention = config.fp8_dot_product_attention;
  out.micro_batch_size = config.micro_batch_size;
  out.num_microbatches = step.num_microbatches;
  out.global_batch_size = config.global_batch_size;
  out.seq_length = step.model.seq_length;
  out.schedule = std::string(strategy::to_string(config.schedule));
  out.recompute = std::string(strategy::to_string(config.recompute));
  out.recompute_modules = strategy::names_of_modules(config.selective_modules());
  out.model_flops_per_step = step.model_flops;
  out.parameters = model::total_parameters(step.model);
  out.active_parameters = model::active_parameters(step.model);

  // The rank that finishes last sets the step time; ties go to the lowest rank.
  const auto critical = std::max_element(
      run.ranks.begin(), run.ranks.end(),
      [](const engine::RankStats& a, const engine::RankStats& b) { return a.finish < b.finish; });
  const engine::RankStats& r = *critical;
  const auto& w = step.workload;
  out.step_time_s = r.finish.seconds();
  out.critical_rank = r.rank;
  out.critical_stage = step.layout.coordinate(r.rank, strategy::Axis::Pp);

  const auto busy = [&](std::uint8_t c) { return r.categories[c].busy.seconds(); };
  const std::pair<const char*, std::uint8_t> dims[] = {{"tp", kTensorParallel},
                                                       {"cp", workload::categories::kContextParallel},
                                                       {"ep", workload::categories::kExpertParallel},
                                                       {"pp", kPipelineParallel},
                                                       {"dp", kDataParallel}};
  const std::vector<double> bus_bytes = internal::bus_bytes_by_category(w, r.rank);
  for (const auto& [name, category] : dims) {
    auto& d = out.communication[name];
    d.bytes = r.categories[category].bytes;
    d.bus_bytes = bus_bytes[category];
    d.time_s = busy(category);
  }
  // Activation offload's copies between HBM and host memory, where a run has them.
  if (const auto& copies = r.categories[workload::categories::kOffload]; copies.count > 0) {
    auto& d = out.communication["offload"];
    d.bytes = copies.bytes;
    d.time_s = copies.busy.seconds();
  }
  out.host_overhead_s = config.host_overhead_s;
  out.cuda_graph_impl = std::string(strategy::to_string(config.cuda_graph_impl));
  for (const auto& [bit, name] : strategy::kCudaGraphModuleNames)
    if (config.cuda_graph_modules & bit) out.cuda_graph_modules.emplace_back(name);
  const std::uint64_t kernels = r.categories[kForward].count + r.categories[kBackward].count +
                                r.categories[kRecompute].count;
  if (kernels > 0)
    out.mean_kernel_s = (busy(kForward) + busy(kBackward) + busy(kRecompute)) / static_cast<double>(kernels);
  std::map<std::string, double> exposed;
  split_time(r, w, out.breakdown, exposed);
  for (const auto& [dim, t] : exposed) out.communication[dim].exposed_s = t;

  const double seconds = out.step_time_s;
  const double gpus = static_cast<double>(config.world_size);
  if (seconds > 0) {
    out.throughput.tokens_per_s = static_cast<double>(step.tokens_per_step) / seconds;
    out.throughput.model_tflops_per_gpu = step.model_flops / seconds / gpus / 1e12;
    out.throughput.hardware_tflops_per_gpu = step.hardware_flops / seconds / gpus / 1e12;
    out.throughput.mfu = step.model_flops / (seconds * gpus * hardware.gpu.peak_flops(Dtype::Bf16));
  }

  // Memory: the highest peak of any rank, and each stage's highest.
  out.stages.resize(static_cast<std::size_t>(config.pp));
  for (std::size_t s = 0; s < out.stages.size(); ++s) {
    out.stages[s].stage = static_cast<std::int64_t>(s);
    out.stages[s].static_bytes = step.stage_static_memory[s].total_bytes();
  }
  const engine::RankStats* peak = &run.ranks.front();
  std::vector<bool> seen(out.stages.size(), false);
  for (const auto& rank : run.ranks) {
    const auto s = static_cast<std::size_t>(step.layout.coordinate(rank.rank, strategy::Axis::Pp));
    if (!seen[s]) {
      seen[s] = true;
      split_time(rank, w, out.stages[s].breakdown, out.stages[s].exposed_s);
    }
  }
  for (const auto& rank : run.ranks) {
    if (rank.peak_memory_bytes > peak->peak_memory_bytes) peak = &rank;
    auto& stage = out.stages[static_cast<std::size_t>(
        step.layout.coordinate(rank.rank, strategy::Axis::Pp))];
    stage.peak_bytes = std::max(stage.peak_bytes, rank.peak_memory_bytes);
    stage.activations_peak_bytes =
        std::max(stage.activations_peak_bytes, rank.peak_memory_bytes - rank.base_memory_bytes);
  }
  const auto peak_stage = step.layout.coordinate(peak->rank, strategy::Axis::Pp);
  const auto& fixed = step.stage_static_memory[static_cast<std::size_t>(peak_stage)];
  out.memory.peak_bytes = peak->peak_memory_bytes;
  out.memory.capacity_bytes = static_cast<std::uint64_t>(hardware.gpu.memory_bytes);
  out.memory.headroom_bytes = static_cast<std::uint64_t>(config.memory_headroom_bytes);
  // What the CUDA context, NCCL and the allocator hold is not the step's.
  out.memory.fits = out.memory.peak_bytes + out.memory.headroom_bytes <= out.memory.capacity_bytes;
  out.memory.params_bytes = fixed.params_bytes;
  out.memory.grads_bytes = fixed.grads_bytes;
  out.memory.optimizer_bytes = fixed.optimizer_bytes;
  out.memory.activations_peak_bytes = peak->peak_memory_bytes - peak->base_memory_bytes;
  out.memory.peak_rank = peak->rank;
  out.memory.peak_stage = peak_stage;

  out.simulation.events = run.events;
  out.simulation.tasks = run.tasks;
  out.simulation.ranks_simulated = static_cast<std::int64_t>(run.ranks.size());
  out.simulation.fingerprint = run.fingerprint;
  return out;
}

}  // namespace ptsim::report

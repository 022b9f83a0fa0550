// The kernels a simulated step runs: every distinct compute kernel (class,
// dtype, shape, bytes), how often one rank of each pipeline stage runs it per
// step, and its predicted time — the list the micro-benchmarks measure.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ptsim/common/dtype.hpp"
#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/model/model_spec.hpp"
#include "ptsim/strategy/parallel_config.hpp"
#include "ptsim/taskgraph/task.hpp"

namespace ptsim::simulate {

struct KernelUse {
  std::vector<std::string> names;  // the ops that run this kernel, e.g. fwd.mlp.fc1, recompute.mlp.fc1
  std::vector<std::uint64_t> name_counts;  // calls of each of `names` per step (they sum to `count`)
  taskgraph::KernelClass kernel = taskgraph::KernelClass::Gemm;
  Dtype dtype = Dtype::Bf16;
  std::array<std::uint32_t, 4> shape{};
  std::uint32_t value_head_dim = 0;  // attention: its value head dim (shape[3] is the query/key one)
  std::uint8_t flags = 0;
  double flops = 0;           // per call, model convention
  std::uint64_t bytes = 0;    // per call
  std::uint64_t count = 0;    // calls per step, summed over one rank of each stage
  double seconds = 0;         // predicted per call, sustained: what the step runs
  double burst_seconds = 0;   // predicted per call at burst rates: what a short benchmark times
};

/// Distinct kernels, longest total time first.
std::vector<KernelUse> kernel_inventory(const model::ModelSpec& model,
                                        const hardware::HardwareProfile& hardware,
                                        const strategy::ParallelConfig& parallel);

/// A step's compute time on one rank of each stage by module: an op name's
/// first two parts after its pass, without a backward role (.dgrad, .wgrad,
/// .bwd) at its end (fwd.moe.experts.fc1 → moe.experts, bwd.lm_head.dgrad →
/// lm_head, bwd.ln2.bwd → ln2, bwd.mamba.ssd.bwd_dx → mamba.ssd), split by pass: forward,
/// backward, the recomputed forward, and the rest (optimizer, FSDP copies).
struct ModuleTime {
  std::string module;
  std::uint64_t calls = 0;
  double forward_s = 0, backward_s = 0, recompute_s = 0, other_s = 0;
  double total_s() const { return forward_s + backward_s + recompute_s + other_s; }
};

/// The modules of `kernels`, longest total first.
std::vector<ModuleTime> module_times(const std::vector<KernelUse>& kernels);

/// One line per kernel for the micro-benchmarks (src/microbench reads it):
///   gemm DTYPE M N K BATCH
///   attention DTYPE BATCH_HEADS SEQ_Q SEQ_KV HEAD_DIM causal|full forward|backward
/// (attention the micro-benchmarks cannot time, with a window, in FP8 or with
/// a value head dim other than its query/key one, as a comment)
///   memory CLASS BYTES
std::string microbench_list(const std::vector<KernelUse>& kernels);

}  // namespace ptsim::simulate

// Inventory of a step's kernels (see kernel_inventory.hpp).
#include "ptsim/simulate/kernel_inventory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <tuple>

#include "ptsim/cost/compute_cost.hpp"
#include "ptsim/simulate/simulate_step.hpp"
#include "ptsim/workload/step_workload.hpp"

namespace ptsim::simulate {

namespace {
using Key = std::tuple<taskgraph::KernelClass, Dtype, std::array<std::uint32_t, 4>, std::uint8_t,
                       std::uint64_t, double>;
}

std::vector<KernelUse> kernel_inventory(const model::ModelSpec& model,
                                        const hardware::HardwareProfile& hardware,
                                        const strategy::ParallelConfig& parallel) {
  const workload::StepWorkload step = workload::build_step_workload(model, on_hardware(parallel, hardware));
  std::map<Key, KernelUse> uses;
  for (const auto& program : step.workload.programs) {
    std::vector<std::uint64_t> instances(program.num_blocks(), 0);
    for (const auto& inst : program.instances()) ++instances[inst.block];
    for (std::uint32_t b = 0; b < program.num_blocks(); ++b) {
      const auto& block = program.block(b);
      for (taskgraph::TaskId t = 0; t < block.size(); ++t) {
        const auto& task = block.task(t);
        // Kernels only: activation offload's copies run on copy engines.
        if (task.kind != taskgraph::TaskKind::Compute || task.kernel == taskgraph::KernelClass::HostCopy ||
            instances[b] == 0)
          continue;
        const Key key{task.kernel, task.dtype, task.shape, task.flags, task.bytes, task.flops};
        KernelUse& use = uses[key];
        if (use.count == 0) {
          use.kernel = task.kernel;
          use.dtype = task.dtype;
          use.shape = task.shape;
          if (taskgraph::attention_shaped(task.kernel))
            use.value_head_dim = static_cast<std::uint32_t>(std::lround(taskgraph::attention_value_head_dim(task)));
          use.flags = task.flags;
          use.flops = task.flops;
          use.bytes = task.bytes;
          use.seconds = cost::compute_seconds(hardware, task, cost::Load::Sustained);
          use.burst_seconds = cost::compute_seconds(hardware, task, cost::Load::Burst);
        }
        use.count += instances[b];
        const std::string& name = step.workload.op_names[task.name];
        const auto at = std::find(use.names.begin(), use.names.end(), name);
        if (at == use.names.end()) {
          use.names.push_back(name);
          use.name_counts.push_back(instances[b]);
        } else {
          use.name_counts[static_cast<std::size_t>(at - use.names.begin())] += instances[b];
        }
      }
    }
  }
  std::vector<KernelUse> out;
  for (auto& [key, use] : uses) out.push_back(std::move(use));
  std::stable_sort(out.begin(), out.end(), [](const KernelUse& a, const KernelUse& b) {
    return a.seconds * static_cast<double>(a.count) > b.seconds * static_cast<double>(b.count);
  });
  return out;
}

std::vector<ModuleTime> module_times(const std::vector<KernelUse>& kernels) {
  std::map<std::string, ModuleTime> modules;
  for (const auto& k : kernels) {
    for (std::size_t i = 0; i < k.names.size(); ++i) {
      const std::string& name = k.names[i];
      const std::size_t pass_end = name.find('.');
      const std::string pass = name.substr(0, pass_end);
      const bool known_pass = pass == "fwd" || pass == "bwd" || pass == "recompute";
      std::string rest = known_pass && pass_end != std::string::npos ? name.substr(pass_end + 1) : name;
      // A backward op's role (lm_head.dgrad, ln2.bwd) is not a module of its own.
      for (const char* role : {".dgrad", ".wgrad", ".bwd"})
        if (rest.ends_with(role)) rest.resize(rest.size() - std::string_view(role).size());
      const std::size_t first = rest.find('.');
      const std::size_t second = first == std::string::npos ? first : rest.find('.', first + 1);
      ModuleTime& m = modules[rest.substr(0, second)];
      const double seconds = k.seconds * static_cast<double>(k.name_counts[i]);
      m.calls += k.name_counts[i];
      (pass == "fwd"         ? m.forward_s
       : pass == "bwd"       ? m.backward_s
       : pass == "recompute" ? m.recompute_s
                             : m.other_s) += seconds;
    }
  }
  std::vector<ModuleTime> out;
  for (auto& [module, m] : modules) {
    m.module = module;
    out.push_back(std::move(m));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ModuleTime& a, const ModuleTime& b) { return a.total_s() > b.total_s(); });
  return out;
}

std::string microbench_list(const std::vector<KernelUse>& kernels) {
  std::string text;
  for (const auto& k : kernels) {
    switch (k.kernel) {
      case taskgraph::KernelClass::Gemm:
        text += fmt::format("gemm {} {} {} {} {}\n", to_string(k.dtype), k.shape[0], k.shape[1],
                            k.shape[2], std::max<std::uint32_t>(1, k.shape[3]));
        break;
      case taskgraph::KernelClass::Attention:
        // ptsim-microbench's attention kernel is bf16, has no window, one
        // head dim for query, key and value, and as many keys as queries
        // (a context-parallel step's block may have half as many).
        if (k.flags & taskgraph::kSlidingWindow) text += "# not measurable (sliding window): ";
        else if (k.dtype != Dtype::Bf16)
          text += "# not measurable (FP8 attention): ";
        else if (k.value_head_dim != k.shape[3])
          text += fmt::format("# not measurable (value head dim {}): ", k.value_head_dim);
        else if (k.shape[2] != k.shape[1])
          text += fmt::format("# not measurable ({} keys for {} queries): ", k.shape[2], k.shape[1]);
        text += fmt::format("attention {} {} {} {} {} {} {}\n", to_string(k.dtype), k.shape[0],
                            k.shape[1], k.shape[2], k.shape[3],
                            k.flags & taskgraph::kCausal ? "causal" : "full",
                            k.flags & taskgraph::kBackwardPass ? "backward" : "forward");
        break;
      case taskgraph::KernelClass::SparseAttention:
        // ptsim-microbench has no sparse attention kernel: the list names it.
        text += fmt::format("# not measurable (token-level sparse attention): sparse_attention {} {} {} {} {} {}\n",
                            to_string(k.dtype), k.shape[0], k.shape[1], k.shape[2], k.shape[3],
                            k.flags & taskgraph::kBackwardPass ? "backward" : "forward");
        break;
      case taskgraph::KernelClass::StateSpaceScan:
        // ptsim-microbench has no SSD kernel (mamba_ssm's Triton kernels).
        text +=
            fmt::format("# not measurable (Mamba-2 SSD scan): memory {} {}\n", taskgraph::to_string(k.kernel), k.bytes);
        break;
      default:
        text += fmt::format("memory {} {}\n", taskgraph::to_string(k.kernel), k.bytes);
    }
  }
  return text;
}

}  // namespace ptsim::simulate

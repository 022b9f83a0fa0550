// Measured kernels as Tasks (see internal/kernel_task.hpp).
#include "internal/kernel_task.hpp"

#include <cmath>

namespace ptsim::calibrate::internal {

std::optional<taskgraph::KernelClass> memory_class(const std::string& op) {
  using taskgraph::KernelClass;
  for (const KernelClass c : {KernelClass::Norm, KernelClass::Softmax, KernelClass::Elementwise,
                              KernelClass::Embedding, KernelClass::Optimizer, KernelClass::Copy})
    if (op == taskgraph::to_string(c)) return c;
  return std::nullopt;
}

taskgraph::Task kernel_task(const hardware::KernelMeasurement& k) {
  const auto dim = [&](const char* name) {
    const auto it = k.shape.find(name);
    return it == k.shape.end() ? 0u : static_cast<std::uint32_t>(std::llround(it->second));
  };
  taskgraph::Task t;
  t.kind = taskgraph::TaskKind::Compute;
  t.dtype = parse_dtype(k.dtype).value_or(Dtype::Bf16);
  t.flops = k.flops;
  t.bytes = static_cast<std::uint64_t>(std::llround(k.bytes));
  if (k.op == "gemm") {
    t.compute = taskgraph::ComputeKind::Matmul;
    t.kernel = taskgraph::KernelClass::Gemm;
    t.shape = {dim("m"), dim("n"), dim("k"), std::max(1u, dim("batch"))};
  } else if (k.op == "attention") {
    t.compute = taskgraph::ComputeKind::Attention;
    t.kernel = taskgraph::KernelClass::Attention;
    t.shape = {dim("batch_heads"), dim("seq_q"), dim("seq_kv"), dim("head_dim")};
    t.flags = static_cast<std::uint8_t>((dim("causal") ? taskgraph::kCausal : 0) |
                                        (dim("backward") ? taskgraph::kBackwardPass : 0));
  } else {
    t.compute = taskgraph::ComputeKind::MemoryBound;
    t.kernel = memory_class(k.op).value_or(taskgraph::KernelClass::Copy);
  }
  return t;
}

}  // namespace ptsim::calibrate::internal

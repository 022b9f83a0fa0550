// OpSpec factories (see op_spec.hpp).
#include "ptsim/workload/op_spec.hpp"

#include <cmath>

namespace ptsim::workload {

namespace {
constexpr double kElementBytes = 2;  // bf16 activations and weights
std::uint64_t as_bytes(double b) { return static_cast<std::uint64_t>(std::llround(b)); }
std::uint32_t dim(double v) { return static_cast<std::uint32_t>(std::llround(v)); }

}  // namespace

OpSpec matmul(std::string name, double m, double n, double k, double batch, Dtype dtype) {
  OpSpec op;
  op.name = std::move(name);
  op.kind = OpKind::Matmul;
  op.kernel = taskgraph::KernelClass::Gemm;
  op.dtype = dtype;
  op.shape = {dim(m), dim(n), dim(k), dim(batch)};
  op.flops = 2 * m * n * k * batch;
  const double in = static_cast<double>(bytes_of(dtype));
  op.bytes = as_bytes(batch * (in * (m * k + k * n) + kElementBytes * m * n));
  return op;
}

OpSpec memory_op(std::string name, double bytes, taskgraph::KernelClass kernel) {
  OpSpec op;
  op.name = std::move(name);
  op.kind = OpKind::MemoryBound;
  op.kernel = kernel;
  op.bytes = as_bytes(bytes);
  return op;
}

OpSpec attention_op(std::string name, double batch_heads, double seq_q, double seq_kv, double head_dim,
                    double v_head_dim, double kv_heads_ratio, bool causal, bool backward) {
  OpSpec op;
  op.name = std::move(name);
  op.kind = OpKind::Attention;
  op.kernel = taskgraph::KernelClass::Attention;
  op.shape = {dim(batch_heads), dim(seq_q), dim(seq_kv), dim(head_dim)};
  op.flags = static_cast<std::uint8_t>((causal ? taskgraph::kCausal : 0) |
                                       (backward ? taskgraph::kBackwardPass : 0));
  const double forward_flops = 2 * batch_heads * seq_q * seq_kv * (head_dim + v_head_dim);
  op.flops = backward ? 2 * forward_flops : forward_flops;
  // Q and O per query head, K and V per key/value head; backward also reads
  // O and dO and writes dQ, dK, dV.
  const double q = batch_heads * seq_q * head_dim * kElementBytes;
  const double o = batch_heads * seq_q * v_head_dim * kElementBytes;
  const double kv = batch_heads * seq_kv * (head_dim + v_head_dim) * kElementBytes * kv_heads_ratio;
  op.bytes = as_bytes(backward ? 2 * (q + o + kv) : q + o + kv);
  return op;
}

taskgraph::Task kernel_task(const OpSpec& op) {
  taskgraph::Task task;
  task.kind = taskgraph::TaskKind::Compute;
  task.compute = op.kind == OpKind::Matmul      ? taskgraph::ComputeKind::Matmul
                 : op.kind == OpKind::Attention ? taskgraph::ComputeKind::Attention
                                                : taskgraph::ComputeKind::MemoryBound;
  task.kernel = op.kernel;
  task.dtype = op.dtype;
  task.shape = op.shape;
  task.flags = op.flags;
  task.flops = op.flops;
  task.bytes = op.bytes;
  return task;
}

OpSpec collective_op(std::string name, taskgraph::CollectiveKind kind, CommGroup group, double bytes,
                     bool async) {
  OpSpec op;
  op.name = std::move(name);
  op.kind = OpKind::Collective;
  op.collective = kind;
  op.group = group;
  op.bytes = as_bytes(bytes);
  op.async = async;
  return op;
}

}  // namespace ptsim::workload

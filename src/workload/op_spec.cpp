// OpSpec factories (see op_spec.hpp).
#include "ptsim/workload/op_spec.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ptsim/common/error.hpp"

namespace ptsim::workload {

namespace {
constexpr double kElementBytes = 2;  // bf16 activations and weights
// A GEMM or attention dimension as Task::shape holds it (32 bits).
std::uint32_t dim(double v) {
  if (!(v >= 0 && v <= static_cast<double>(std::numeric_limits<std::uint32_t>::max())))
    throw ConfigError(fmt::format(
        "a kernel dimension of {:.4g} is beyond 2^32: the sequence length times the micro-batch "
        "size (or a model dimension) is too large to simulate; reduce --micro-batch-size or the "
        "sequence length",
        v));
  return static_cast<std::uint32_t>(std::llround(v));
}

}  // namespace

std::uint64_t as_bytes(double bytes) {
  constexpr double kLimit = 9007199254740992.0;  // 2^53
  if (!(bytes >= 0 && bytes <= kLimit))
    throw ConfigError(fmt::format(
        "a tensor of {:.4g} bytes is beyond ptsim's limit of 2^53 bytes (8 PiB): the model or "
        "the micro-batch is too large to simulate; check the model's sizes, the sequence length "
        "and --micro-batch-size",
        bytes));
  return static_cast<std::uint64_t>(std::llround(bytes));
}

OpSpec matmul(std::string name, double m, double n, double k, double batch, Dtype dtype) {
  OpSpec op;
  op.name = std::move(name);
  op.kind = OpKind::Matmul;
  op.kernel = taskgraph::KernelClass::Gemm;
  op.dtype = dtype;
  op.shape = {dim(m), dim(n), dim(k), dim(batch)};
  op.flops = 2 * m * n * k * batch;
  const double in = bytes_of(dtype);
  op.bytes = as_bytes(batch * (in * (m * k + k * n) + kElementBytes * m * n));
  return op;
}

OpSpec gradient_accumulation_op(std::string name, double weight_elements, int main_grad_bytes) {
  OpSpec op = memory_op(std::move(name), weight_elements * (kElementBytes + 2.0 * main_grad_bytes));
  op.weight_grad = true;
  return op;
}

void accumulate_after_weight_gradients(std::vector<OpSpec>& ops, int main_grad_bytes) {
  std::vector<OpSpec> out;
  std::vector<int> index(ops.size());  // new position of each op
  for (std::size_t i = 0; i < ops.size(); ++i) {
    index[i] = static_cast<int>(out.size());
    out.push_back(std::move(ops[i]));
    OpSpec& op = out.back();
    if (op.after >= 0) op.after = index[static_cast<std::size_t>(op.after)];
    if (op.weight_grad && op.kind == OpKind::Matmul) {
      const double weight = static_cast<double>(op.shape[0]) * op.shape[1] * op.shape[3];
      OpSpec add = gradient_accumulation_op(op.name + ".accumulate", weight, main_grad_bytes);
      add.graph_region = op.graph_region;  // the hook runs in its GEMM's module
      out.push_back(std::move(add));
    }
  }
  ops = std::move(out);
}

void mark_graph_replays(std::vector<OpSpec>& ops, std::uint8_t captured) {
  bool in_run = false;
  for (OpSpec& op : ops) {
    const bool in_graph = (op.graph_region & captured) != 0;
    op.host_issue = !in_graph ? taskgraph::HostIssue::Eager
                    : in_run  ? taskgraph::HostIssue::InGraph
                              : taskgraph::HostIssue::GraphLaunch;
    in_run = in_graph;
  }
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

// Embedding, output-layer and optimizer ops (see boundary_ops.hpp).
#include "ptsim/workload/boundary_ops.hpp"

#include <cmath>

namespace ptsim::workload {

namespace {

std::uint64_t as_bytes(double b) { return static_cast<std::uint64_t>(std::llround(b)); }

OpSpec with_saved(OpSpec op, double saved) {
  op.saved_bytes = as_bytes(saved);
  return op;
}

OpSpec with_freed(OpSpec op, double freed) {
  op.freed_bytes = as_bytes(freed);
  return op;
}

OpSpec all_reduce(std::string name, double bytes, bool async) {
  OpSpec op;
  op.name = std::move(name);
  op.kind = OpKind::TpAllReduce;
  op.bytes = as_bytes(bytes);
  op.async = async;
  return op;
}

}  // namespace

BlockOps embedding_ops(const model::ModelSpec& m, const MicroShape& shape) {
  const double N = static_cast<double>(shape.seq_length * shape.micro_batch);
  const double h = static_cast<double>(m.hidden_size);
  const bool learned_positions = m.position_embedding == model::PositionEmbedding::LearnedAbsolute;
  BlockOps ops;
  // Gather N rows of the local vocabulary slice (+ position rows), write N×h.
  ops.forward.push_back(memory_op("embedding.lookup", (learned_positions ? 3 : 2) * N * h * 2,
                                  taskgraph::KernelClass::Embedding));
  if (shape.tp > 1) ops.forward.push_back(all_reduce("embedding.allreduce", 2 * N * h, false));
  if (m.dropout > 0)
    ops.forward.push_back(with_saved(memory_op("embedding.dropout", N * h * 5), N * h));

  if (m.dropout > 0)
    ops.backward.push_back(with_freed(memory_op("embedding.dropout.bwd", N * h * 5), N * h));
  // Scatter-add of N gradient rows into the embedding gradient (read-modify-write).
  ops.backward.push_back(memory_op("embedding.wgrad", (learned_positions ? 2 : 1) * N * h * 2 * 3,
                                   taskgraph::KernelClass::Embedding));
  return ops;
}

BlockOps output_ops(const model::ModelSpec& m, const MicroShape& shape) {
  const double N = static_cast<double>(shape.seq_length * shape.micro_batch);
  const double h = static_cast<double>(m.hidden_size);
  const double v = static_cast<double>(m.vocab_size) / static_cast<double>(shape.tp);
  const bool tp = shape.tp > 1;
  BlockOps ops;
  auto& fw = ops.forward;
  auto& bw = ops.backward;
  fw.push_back(with_saved(memory_op("final_norm", 2 * N * h * 2, taskgraph::KernelClass::Norm), 2 * N * h));
  fw.push_back(with_saved(matmul("lm_head", N, v, h), 2 * N * h));
  // Cross-entropy in fp32: cast the bf16 logits (read 2, write 4 bytes), then
  // max, exp and sum passes (read 4, write 4); the fp32 exp-logits are kept.
  fw.push_back(with_saved(memory_op("cross_entropy", N * v * (2 + 4 + 4 + 4), taskgraph::KernelClass::Softmax),
                          4 * N * v));
  if (tp)
    for (const char* what : {"max", "target", "sum_exp"})
      fw.push_back(all_reduce(std::string("cross_entropy.allreduce.") + what, 4 * N, false));

  bw.push_back(with_freed(memory_op("cross_entropy.bwd", N * v * (4 + 2), taskgraph::KernelClass::Softmax),
                          4 * N * v));
  bw.push_back(matmul("lm_head.dgrad", N, h, v));
  if (tp) bw.push_back(all_reduce("lm_head.dgrad.allreduce", 2 * N * h, true));
  bw.push_back(with_freed(matmul("lm_head.wgrad", v, h, N), 2 * N * h));
  bw.push_back(with_freed(memory_op("final_norm.bwd", 2 * N * h * 4, taskgraph::KernelClass::Norm), 2 * N * h));
  return ops;
}

OpSpec optimizer_step_op(std::int64_t parameters) {
  return memory_op("optimizer.adam", 28.0 * static_cast<double>(parameters),
                   taskgraph::KernelClass::Optimizer);
}

}  // namespace ptsim::workload

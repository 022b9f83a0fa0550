// OpSpec factories (see op_spec.hpp).
#include "ptsim/workload/op_spec.hpp"

#include <cmath>

namespace ptsim::workload {

namespace {
constexpr double kElementBytes = 2;  // bf16 activations and weights
std::uint64_t as_bytes(double b) { return static_cast<std::uint64_t>(std::llround(b)); }
}  // namespace

OpSpec matmul(std::string name, double m, double n, double k, double batch) {
  OpSpec op;
  op.name = std::move(name);
  op.kind = OpKind::Matmul;
  op.flops = 2 * m * n * k * batch;
  op.bytes = as_bytes(kElementBytes * batch * (m * k + k * n + m * n));
  return op;
}

OpSpec memory_op(std::string name, double bytes) {
  OpSpec op;
  op.name = std::move(name);
  op.kind = OpKind::MemoryBound;
  op.bytes = as_bytes(bytes);
  return op;
}

}  // namespace ptsim::workload

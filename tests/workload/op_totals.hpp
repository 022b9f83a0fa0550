// Totals over a layer's ops, for the workload tests that count kernels and
// bytes by hand.
#pragma once

#include <string>
#include <vector>

#include "ptsim/workload/op_spec.hpp"

namespace ptsim::test {

struct OpTotals {
  double bytes = 0;
  int kernels = 0;
  double saved = 0;
  double freed = 0;
};

// The memory-bound ops of `ops` whose name `selects`.
template <typename Select>
OpTotals memory_op_totals(const std::vector<workload::OpSpec>& ops, Select selects) {
  OpTotals s;
  for (const auto& op : ops)
    if (op.kind == workload::OpKind::MemoryBound && selects(op.name)) {
      s.bytes += static_cast<double>(op.bytes);
      ++s.kernels;
      s.saved += static_cast<double>(op.saved_bytes);
      s.freed += static_cast<double>(op.freed_bytes);
    }
  return s;
}

}  // namespace ptsim::test

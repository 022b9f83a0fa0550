// Megatron-LM's batched pipeline send/receive calls (see internal/p2p_calls.hpp).
#include "internal/p2p_calls.hpp"

#include <algorithm>

namespace ptsim::workload::internal {

namespace {

using strategy::Pass;
using strategy::ScheduleKind;

// Whether the send that ends step i and the receive that opens step i + 1
// are one call. Megatron's 1F1B batches a send with the receive of the
// other pass (send_forward_recv_backward, send_backward_recv_forward) but
// issues a warmup send_forward and the next recv_forward, or a cooldown
// send_backward and the next recv_backward, as calls of their own; its
// interleaved schedule batches those too (send_forward_recv_forward,
// send_backward_recv_backward).
bool batched_with_next(const strategy::ParallelConfig& c, const std::vector<strategy::PipelineStep>& order,
                       std::size_t i) {
  if (c.schedule == ScheduleKind::Interleaved) return true;
  const auto forward = [](const strategy::PipelineStep& st) { return st.pass == Pass::Forward; };
  return forward(order[i]) != forward(order[i + 1]);
}

}  // namespace

std::vector<P2pCall> megatron_p2p_calls(const strategy::ParallelConfig& c,
                                        const std::vector<strategy::PipelineStep>& order,
                                        const std::function<bool(const strategy::PipelineStep&)>& receives) {
  std::vector<P2pCall> calls(order.size());
  if (!c.host_syncs_after_p2p()) return calls;
  const auto forward = [](const strategy::PipelineStep& st) { return st.pass == Pass::Forward; };
  const auto first_other = std::find_if_not(order.begin(), order.end(), forward);
  const bool pairs = c.schedule == ScheduleKind::Interleaved && std::any_of(first_other, order.end(), forward);
  const auto paired = [&](std::size_t f) {
    return pairs && f + 1 < order.size() && forward(order[f]) && order[f + 1].pass == Pass::Backward;
  };
  for (std::size_t i = 0; i < order.size(); ++i) {
    P2pCall& call = calls[i];
    call.recv_syncs = true;
    call.send_syncs = !(i + 1 < order.size() && receives(order[i + 1]) && batched_with_next(c, order, i));
    if (paired(i) && receives(order[i + 1])) call.early_recv = order[i + 1];
    call.skip_recv = i > 0 && paired(i - 1);
  }
  return calls;
}

}  // namespace ptsim::workload::internal

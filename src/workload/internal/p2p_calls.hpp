// How each step's pipeline transfers end Megatron-LM's batched send/receive
// calls, after which its host synchronizes. Private to workload/.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "ptsim/strategy/parallel_config.hpp"
#include "ptsim/strategy/pipeline_schedule.hpp"

namespace ptsim::workload::internal {

// How a step's pipeline transfers end the host's send/receive calls.
struct P2pCall {
  bool recv_syncs = false;  // its receive ends a call: the host synchronizes after it
  bool send_syncs = false;  // its send ends a call
  // Interleaved: the receive of the backward paired with this forward, issued
  // before it; that backward skips its own (skip_recv).
  std::optional<strategy::PipelineStep> early_recv;
  bool skip_recv = false;
};

/// How each step's pipeline transfers end Megatron's send/receive calls,
/// after which the host synchronizes (ParallelConfig::host_syncs_after_p2p;
/// without it, nothing synchronizes). A send and the receive that opens the
/// next step are one batched call (send_forward_recv_backward and the like):
/// the host synchronizes after the receive; a send with no receive after it
/// ends its own call. Megatron's interleaved schedule runs a steady-state
/// forward and backward back to back and then one call for both
/// (send_forward_backward_recv_forward_backward): nothing synchronizes
/// between them, and that call also receives what the next forward and
/// backward need, so the backward's receive is issued before the forward
/// (received after it, it would come a forward later than the sender's
/// synchronization waits for: a deadlock Megatron's batching avoids). When
/// every forward comes first, as with as many micro-batches as stages,
/// there is no steady state and no pair.
/// `receives(step)`: whether the step opens with a pipeline receive on this stage.
std::vector<P2pCall> megatron_p2p_calls(const strategy::ParallelConfig& c,
                                        const std::vector<strategy::PipelineStep>& order,
                                        const std::function<bool(const strategy::PipelineStep&)>& receives);

}  // namespace ptsim::workload::internal

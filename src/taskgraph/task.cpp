// Names of task enums (see task.hpp).
#include "ptsim/taskgraph/task.hpp"

namespace ptsim::taskgraph {

std::string_view to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::None: return "none";
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::Reduce: return "reduce";
    case CollectiveKind::AllToAll: return "all_to_all";
    case CollectiveKind::PointToPoint: return "send_recv";
    case CollectiveKind::ExpertDispatch: return "expert_dispatch";
  }
  return "?";
}

std::string_view to_string(KernelClass k) {
  switch (k) {
    case KernelClass::Gemm: return "gemm";
    case KernelClass::Attention: return "attention";
    case KernelClass::Norm: return "norm";
    case KernelClass::Softmax: return "softmax";
    case KernelClass::Elementwise: return "elementwise";
    case KernelClass::Embedding: return "embedding";
    case KernelClass::Optimizer: return "optimizer";
    case KernelClass::Copy: return "copy";
    case KernelClass::HostCopy: return "host_copy";
    case KernelClass::SparseAttention: return "sparse_attention";
    case KernelClass::StateSpaceScan: return "ssd_scan";
  }
  return "?";
}

ExpertExchange expert_exchange_of(const Task& task) {
  return {task.shape[0], task.shape[1], static_cast<ExchangeLibrary>(task.shape[2]), (task.shape[3] & 1u) != 0,
          task.shape[3] >> 1};
}

double attention_value_head_dim(const Task& task) {
  const double s = task.shape[1], keys = task.shape[2];
  // A window's shape[2] is its width; its task counts the band's scores.
  const double scores = (task.flags & kSlidingWindow) ? keys * (keys + 1) / 2 + (s - keys) * keys : s * keys;
  const double total = static_cast<double>(task.shape[0]) * scores * ((task.flags & kBackwardPass) ? 4 : 2);
  return total > 0 ? task.flops / total - task.shape[3] : 0;
}

}  // namespace ptsim::taskgraph

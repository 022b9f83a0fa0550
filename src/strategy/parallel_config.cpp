// Names of the strategy enums, as flags and files spell them.
#include "ptsim/strategy/parallel_config.hpp"

#include "ptsim/strategy/schedule.hpp"

namespace ptsim::strategy {

std::string_view to_string(ScheduleKind s) { return describe(s).name; }

std::string_view to_string(RecomputeKind r) {
  switch (r) {
    case RecomputeKind::None: return "none";
    case RecomputeKind::Selective: return "selective";
    case RecomputeKind::Full: return "full";
    case RecomputeKind::Op: return "op";
  }
  return "?";
}

std::string_view to_string(MoeDispatcher d) {
  switch (d) {
    case MoeDispatcher::AllToAll: return "alltoall";
    case MoeDispatcher::AllGather: return "allgather";
    case MoeDispatcher::Flex: return "flex";
  }
  return "alltoall";
}

std::string_view to_string(MoeFlexBackend b) { return b == MoeFlexBackend::HybridEP ? "hybridep" : "deepep"; }

std::string_view to_string(CudaGraphImpl i) {
  switch (i) {
    case CudaGraphImpl::None: return "none";
    case CudaGraphImpl::Local: return "local";
    case CudaGraphImpl::TransformerEngine: return "transformer_engine";
    case CudaGraphImpl::FullIteration: return "full_iteration";
  }
  return "?";
}

std::string cuda_graph_module_names(CudaGraphModules modules) {
  std::string out;
  for (const auto& [bit, name] : kCudaGraphModuleNames) {
    if (!(modules & bit)) continue;
    if (!out.empty()) out += ',';
    out += name;
  }
  return out;
}

CudaGraphModules cuda_graph_module_named(std::string_view name) {
  for (const auto& [bit, known] : kCudaGraphModuleNames)
    if (name == known) return bit;
  return 0;
}

std::uint8_t offload_module_named(std::string_view name) {
  for (const auto& [bit, known] : kOffloadModuleNames)
    if (name == known) return bit;
  return 0;
}

std::string_view to_string(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::Delayed: return "delayed";
    case Fp8Recipe::Tensorwise: return "tensorwise";
    case Fp8Recipe::Blockwise: return "blockwise";
    case Fp8Recipe::Mxfp8: return "mxfp8";
    case Fp8Recipe::Rowwise: return "rowwise";
  }
  return "?";
}

std::string_view to_string(KernelFusion k) {
  switch (k) {
    case KernelFusion::Fused: return "fused";
    case KernelFusion::Eager: return "eager";
    case KernelFusion::Compiled: return "compiled";
  }
  return "?";
}

std::string_view to_string(Optimizer o) {
  switch (o) {
    case Optimizer::Adam: return "adam";
    case Optimizer::Muon: return "muon";
  }
  return "?";
}

std::string_view to_string(MuonTpMode m) {
  switch (m) {
    case MuonTpMode::Blockwise: return "blockwise";
    case MuonTpMode::Duplicated: return "duplicated";
  }
  return "?";
}

std::string_view to_string(CpRotateMethod r) {
  switch (r) {
    case CpRotateMethod::AllGather: return "allgather";
    case CpRotateMethod::AllToAll: return "alltoall";
  }
  return "?";
}

std::string_view to_string(AttentionBackend a) {
  switch (a) {
    case AttentionBackend::Flash: return "flash";
    case AttentionBackend::Unfused: return "unfused";
    case AttentionBackend::Cudnn: return "cudnn";
    case AttentionBackend::Flash2: return "flash2";
    case AttentionBackend::Triton: return "triton";
  }
  return "?";
}

}  // namespace ptsim::strategy

// ParallelConfig: how the model is parallelised — Megatron-LM's knobs, already
// validated against each other (config/validate checks them against the model
// and the hardware too). Input stage of the flow.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ptsim/common/dtype.hpp"

namespace ptsim::strategy {

enum class ScheduleKind {
  Naive,        // plain model parallelism: one micro-batch (the whole per-replica batch)
  GPipe,        // all forwards, then all backwards (Huang et al. 2019)
  OneFOneB,     // PipeDream-Flush as in Megatron-LM (Narayanan et al. 2021)
  Interleaved,  // interleaved 1F1B over v model chunks per stage (Narayanan et al. 2021 §2.2.2)
  ZbH1,         // zero bubble, 1F1B's memory: backward split into B and W (Qi et al. 2023)
  ZbH2,         // zero bubble, twice 1F1B's in-flight micro-batches
  DualPipe,     // DeepSeek-V3's bidirectional pipeline (DeepSeek-AI 2024, deepseek-ai/DualPipe)
};

enum class RecomputeKind { None, Full };

enum class AttentionBackend {
  Flash,    // fused attention kernels (FlashAttention/cuDNN), Megatron-Core's default
  Unfused,  // QKᵀ, softmax, dropout and PV as separate kernels (Megatron-LM 2021)
};

std::string_view to_string(ScheduleKind s);
std::string_view to_string(RecomputeKind r);
std::string_view to_string(AttentionBackend a);

struct ParallelConfig {
  std::int64_t world_size = 1;  // GPUs
  std::int64_t tp = 1;          // tensor-model-parallel size
  std::int64_t pp = 1;          // pipeline-model-parallel size
  std::int64_t dp = 1;          // data-parallel size = world / (tp·pp)
  std::int64_t micro_batch_size = 1;   // sequences per micro-batch
  std::int64_t global_batch_size = 1;  // sequences per step, all replicas
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  RecomputeKind recompute = RecomputeKind::None;
  AttentionBackend attention = AttentionBackend::Flash;
  /// Inputs of the transformer layers' linear GEMMs: bf16, or fp8 (e4m3) under
  /// FP8 training; everything else stays bf16.
  Dtype precision = Dtype::Bf16;
  /// How ranks map to (tp, dp, pp) coordinates; see RankLayout.
  std::string rank_order = "tp-cp-ep-dp-pp";
  /// Megatron's DDP bucket: gradients are reduced in buckets of this many
  /// parameters (Megatron-LM default 40M; the bucket grows with dp, see
  /// DistributedDataParallelConfig.bucket_size).
  std::int64_t ddp_bucket_parameters = 40'000'000;

  /// Micro-batches each pipeline runs per step: GBS / (MBS·DP).
  std::int64_t num_microbatches() const { return global_batch_size / (micro_batch_size * dp); }
};

}  // namespace ptsim::strategy

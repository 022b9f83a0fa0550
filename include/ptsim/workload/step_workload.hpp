// The workload builder: turns (model, strategy) into the Workload of one
// training step — one program per pipeline stage, in the schedule's order,
// with every kernel, tensor-parallel all-reduce, pipeline send/recv,
// data-parallel gradient bucket and the optimizer step — plus what reports
// need to interpret it. It orders nothing in time: the engine does.
#pragma once

#include <cstdint>
#include <vector>

#include "ptsim/model/model_spec.hpp"
#include "ptsim/strategy/parallel_config.hpp"
#include "ptsim/strategy/rank_layout.hpp"
#include "ptsim/strategy/stage_partition.hpp"
#include "ptsim/taskgraph/workload.hpp"
#include "ptsim/workload/stage_parameters.hpp"

namespace ptsim::workload {

/// Stream indices of every program (stream 0 is the compute stream).
namespace streams {
inline constexpr std::uint8_t kCompute = 0;
inline constexpr std::uint8_t kTensorParallel = 1;
inline constexpr std::uint8_t kDataParallel = 2;
inline constexpr std::uint8_t kPipelineSendForward = 3;
inline constexpr std::uint8_t kPipelineRecvForward = 4;
inline constexpr std::uint8_t kPipelineSendBackward = 5;
inline constexpr std::uint8_t kPipelineRecvBackward = 6;
inline constexpr std::uint8_t kEmbeddingGrad = 7;  // tied-embedding gradient sync between stages
inline constexpr std::uint8_t kContextSend = 8;    // ring attention: to the next CP rank
inline constexpr std::uint8_t kContextRecv = 9;    // ring attention: from the previous CP rank
inline constexpr std::uint8_t kExpertParallel = 10;  // MoE all-to-all
// DualPipe's second direction (chunk 1): its own channels and streams.
inline constexpr std::uint8_t kPipeline1SendForward = 11;
inline constexpr std::uint8_t kPipeline1RecvForward = 12;
inline constexpr std::uint8_t kPipeline1SendBackward = 13;
inline constexpr std::uint8_t kPipeline1RecvBackward = 14;
// The second compute lane (DualPipe's backward overlapped with a forward) and
// the communication it issues.
inline constexpr std::uint8_t kCompute1 = 15;
inline constexpr std::uint8_t kTensorParallel1 = 16;
inline constexpr std::uint8_t kExpertParallel1 = 17;
/// Across Megatron's optimizer instances (ParallelConfig::optimizer_instances):
/// the reductions and gathers between the instances, beside those inside one.
inline constexpr std::uint8_t kDataParallelOuter = 18;
/// Activation offload's copy engines: to host memory after a layer's
/// forward, back before its backward (Workload::copy_stream_mask).
inline constexpr std::uint8_t kOffloadToHost = 19;
inline constexpr std::uint8_t kOffloadFromHost = 20;
inline constexpr std::uint8_t kCount = 21;
}  // namespace streams

/// Communicator slots every program names (resolved per rank).
namespace slots {
inline constexpr std::uint8_t kTensorParallel = 0;
inline constexpr std::uint8_t kDataParallel = 1;   // dense gradients: dp·cp ranks (DualPipe: and the mirror stage)
inline constexpr std::uint8_t kEmbedding = 2;  // first and last stage, tied embeddings
inline constexpr std::uint8_t kPipelineForwardSend = 3;
inline constexpr std::uint8_t kPipelineForwardRecv = 4;
inline constexpr std::uint8_t kPipelineBackwardSend = 5;
inline constexpr std::uint8_t kPipelineBackwardRecv = 6;
inline constexpr std::uint8_t kContextSend = 7;
inline constexpr std::uint8_t kContextRecv = 8;
inline constexpr std::uint8_t kExpertParallel = 9;
inline constexpr std::uint8_t kExpertTensorParallel = 10;
inline constexpr std::uint8_t kExpertDataParallel = 11;  // expert gradients
inline constexpr std::uint8_t kPipeline1ForwardSend = 12;
inline constexpr std::uint8_t kPipeline1ForwardRecv = 13;
inline constexpr std::uint8_t kPipeline1BackwardSend = 14;
inline constexpr std::uint8_t kPipeline1BackwardRecv = 15;
inline constexpr std::uint8_t kAmax = 16;  // FP8 amax reduction: the stage's tp·cp·dp ranks
// The second compute lane's collectives: the same groups as communicators of
// their own, so that each communicator keeps one stream and one order.
inline constexpr std::uint8_t kTensorParallel1 = 17;
inline constexpr std::uint8_t kExpertParallel1 = 18;
inline constexpr std::uint8_t kExpertTensorParallel1 = 19;
/// HSDP: the ranks holding the same shard in each replica (kDataParallel is
/// then the shard group).
inline constexpr std::uint8_t kDataParallelReplicate = 20;
/// The CP group as one communicator: PyTorch's context parallelism gathers
/// every rank's keys and values over it (Megatron-Core's ring only sends).
inline constexpr std::uint8_t kContextParallel = 21;
/// Across Megatron's optimizer instances, the ranks holding the same expert
/// gradient shard (kExpertDataParallel is then the group inside an instance).
inline constexpr std::uint8_t kExpertDataParallelReplicate = 22;
inline constexpr std::uint8_t kCount = 23;
}  // namespace slots

/// Task categories, for the report's breakdown.
namespace categories {
inline constexpr std::uint8_t kForward = 0;
inline constexpr std::uint8_t kBackward = 1;
inline constexpr std::uint8_t kRecompute = 2;
inline constexpr std::uint8_t kOptimizer = 3;
inline constexpr std::uint8_t kTensorParallel = 4;
inline constexpr std::uint8_t kPipelineParallel = 5;
inline constexpr std::uint8_t kDataParallel = 6;
inline constexpr std::uint8_t kContextParallel = 7;
inline constexpr std::uint8_t kExpertParallel = 8;
inline constexpr std::uint8_t kOffload = 9;  // activation offload's copies to and from host memory
inline constexpr std::uint8_t kCount = 10;
}  // namespace categories

struct StepWorkload {
  taskgraph::Workload workload;
  model::ModelSpec model;                          // as built: vocabulary padded as Megatron pads it
  strategy::RankLayout layout;
  std::vector<std::vector<strategy::LayerRange>> stage_chunks;  // layers of each model chunk of each stage
  std::vector<StaticMemory> stage_static_memory;   // per stage (= per program)
  std::int64_t num_microbatches = 0;
  std::int64_t micro_batch_size = 0;
  double model_flops = 0;     // forward + backward matmul FLOP of the whole step, all ranks
  double hardware_flops = 0;  // model_flops plus recomputation
  std::int64_t tokens_per_step = 0;
};

/// Megatron-LM pads the vocabulary to a multiple of 128·tp
/// (--make-vocab-size-divisible-by 128, times the TP size).
std::int64_t padded_vocab_size(std::int64_t vocab_size, std::int64_t tp);

/// Parameters per data-parallel gradient bucket: Megatron-LM's
/// DistributedDataParallelConfig default, max(ddp_bucket_parameters, 10^6 · dp).
std::int64_t bucket_parameters(const strategy::ParallelConfig& config);

/// Parameters of the transformer layers a rank of `stage` holds, over all
/// its model chunks.
RankParameters stage_layer_parameters(const model::ModelSpec& model, const strategy::ParallelConfig& config,
                                      std::int64_t stage);
/// The same less the layers first_last_layers_bf16 keeps in bf16
/// (ParallelConfig::bf16_layer) and the modules module_precision gives a
/// format of their own, plus the MTP depths on the last virtual stage where
/// they run in the run's format (ParallelConfig::mtp_gemm_dtype): the layer
/// weights fp8 or nvfp4 training quantizes in the run's format.
RankParameters stage_quantized_layer_parameters(const model::ModelSpec& model, const strategy::ParallelConfig& config,
                                                std::int64_t stage);
/// The weights (dense parameters) of a rank of `stage` whose modules
/// module_precision runs in `format`, in its quantized layers, and the MTP
/// depths' parameters where module_precision gives them `format`.
std::int64_t stage_module_parameters(const model::ModelSpec& model, const strategy::ParallelConfig& config,
                                     std::int64_t stage, Dtype format);

/// Parameters a rank of `stage` holds: its chunks' layers, the embedding on
/// the first virtual stage, the output layer on the last. `model`'s
/// vocabulary must already be padded (padded_vocab_size).
RankParameters stage_parameters(const model::ModelSpec& model, const strategy::ParallelConfig& config,
                                std::int64_t stage);

/// The 2-D weights a rank of `stage` holds (layer_weight_matrices of its
/// chunks' layers, and the MTP depths' on the last virtual stage): what Muon
/// updates.
std::vector<WeightMatrix> stage_weight_matrices(const model::ModelSpec& model, const strategy::ParallelConfig& config,
                                                std::int64_t stage);

/// The static memory of a rank of `stage` under the config's ZeRO stage and optimizer.
StaticMemory stage_static_memory(const model::ModelSpec& model, const strategy::ParallelConfig& config,
                                 std::int64_t stage);

/// Builds the step. The inputs must already be validated (config/validate).
StepWorkload build_step_workload(const model::ModelSpec& model,
                                 const strategy::ParallelConfig& config);

}  // namespace ptsim::workload

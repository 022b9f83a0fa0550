// Composition of a training step's workload (see step_workload.hpp).
#include "ptsim/strategy/quantization.hpp"
#include "ptsim/workload/step_workload.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>
#include <optional>

#include "internal/communicators.hpp"
#include "internal/name_table.hpp"
#include "internal/stage_program.hpp"
#include "ptsim/strategy/schedule.hpp"
#include "ptsim/strategy/pipeline_schedule.hpp"
#include "ptsim/strategy/stage_partition.hpp"

namespace ptsim::workload {

std::int64_t padded_vocab_size(std::int64_t vocab_size, std::int64_t tp) {
  const std::int64_t multiple = 128 * tp;
  return (vocab_size + multiple - 1) / multiple * multiple;
}

std::int64_t bucket_parameters(const strategy::ParallelConfig& config) {
  return std::max(config.ddp_bucket_parameters, 1'000'000 * config.dp);
}

namespace {

// Each stream, slot and category by its id, named once: the tables are
// indexed by id, which the static_asserts below tie to the constants of
// step_workload.hpp.
struct StreamLabel {
  std::uint8_t id;
  std::string_view name;
  std::string_view dimension;  // the report's communication dimension; "" for compute
};
// The embedding group exists because pipelining splits the tied input and
// output embeddings over two stages: its traffic counts as pipeline traffic.
constexpr std::array<StreamLabel, streams::kCount> kStreams = {{
    {streams::kCompute, "compute", ""},
    {streams::kTensorParallel, "tp", "tp"},
    {streams::kDataParallel, "dp", "dp"},
    {streams::kPipelineSendForward, "pp_send_forward", "pp"},
    {streams::kPipelineRecvForward, "pp_recv_forward", "pp"},
    {streams::kPipelineSendBackward, "pp_send_backward", "pp"},
    {streams::kPipelineRecvBackward, "pp_recv_backward", "pp"},
    {streams::kEmbeddingGrad, "embedding_grad", "pp"},
    {streams::kContextSend, "cp_send", "cp"},
    {streams::kContextRecv, "cp_recv", "cp"},
    {streams::kExpertParallel, "ep", "ep"},
    {streams::kPipeline1SendForward, "pp1_send_forward", "pp"},
    {streams::kPipeline1RecvForward, "pp1_recv_forward", "pp"},
    {streams::kPipeline1SendBackward, "pp1_send_backward", "pp"},
    {streams::kPipeline1RecvBackward, "pp1_recv_backward", "pp"},
    {streams::kCompute1, "compute1", ""},
    {streams::kTensorParallel1, "tp1", "tp"},
    {streams::kExpertParallel1, "ep1", "ep"},
    {streams::kDataParallelOuter, "dp_outer", "dp"},
    {streams::kOffloadToHost, "offload_to_host", "offload"},
    {streams::kOffloadFromHost, "offload_from_host", "offload"},
}};

struct Label {
  std::uint8_t id;
  std::string_view name;
};
constexpr std::array<Label, slots::kCount> kSlots = {{
    {slots::kTensorParallel, "tp"},
    {slots::kDataParallel, "dp"},
    {slots::kEmbedding, "embedding"},
    {slots::kPipelineForwardSend, "pp_forward_send"},
    {slots::kPipelineForwardRecv, "pp_forward_recv"},
    {slots::kPipelineBackwardSend, "pp_backward_send"},
    {slots::kPipelineBackwardRecv, "pp_backward_recv"},
    {slots::kContextSend, "cp_send"},
    {slots::kContextRecv, "cp_recv"},
    {slots::kExpertParallel, "ep"},
    {slots::kExpertTensorParallel, "etp"},
    {slots::kExpertDataParallel, "edp"},
    {slots::kPipeline1ForwardSend, "pp1_forward_send"},
    {slots::kPipeline1ForwardRecv, "pp1_forward_recv"},
    {slots::kPipeline1BackwardSend, "pp1_backward_send"},
    {slots::kPipeline1BackwardRecv, "pp1_backward_recv"},
    {slots::kAmax, "amax"},
    {slots::kTensorParallel1, "tp1"},
    {slots::kExpertParallel1, "ep1"},
    {slots::kExpertTensorParallel1, "etp1"},
    {slots::kDataParallelReplicate, "dp_replicate"},
    {slots::kContextParallel, "cp"},
    {slots::kExpertDataParallelReplicate, "edp_replicate"},
}};
constexpr std::array<Label, categories::kCount> kCategories = {{
    {categories::kForward, "forward"},
    {categories::kBackward, "backward"},
    {categories::kRecompute, "recompute"},
    {categories::kOptimizer, "optimizer"},
    {categories::kTensorParallel, "tp"},
    {categories::kPipelineParallel, "pp"},
    {categories::kDataParallel, "dp"},
    {categories::kContextParallel, "cp"},
    {categories::kExpertParallel, "ep"},
    {categories::kOffload, "offload"},
}};

template <typename T, std::size_t N>
constexpr bool indexed_by_id(const std::array<T, N>& table) {
  for (std::size_t i = 0; i < N; ++i)
    if (table[i].id != i) return false;
  return true;
}
static_assert(indexed_by_id(kStreams), "kStreams lists every stream at its id");
static_assert(indexed_by_id(kSlots), "kSlots lists every communicator slot at its id");
static_assert(indexed_by_id(kCategories), "kCategories lists every category at its id");

void label(taskgraph::Workload& w) {
  for (const StreamLabel& s : kStreams) {
    w.stream_names.emplace_back(s.name);
    w.stream_dimension.emplace_back(s.dimension);
  }
  w.compute_stream_mask = (1u << streams::kCompute) | (1u << streams::kCompute1);
  w.copy_stream_mask = (1u << streams::kOffloadToHost) | (1u << streams::kOffloadFromHost);
  for (const Label& c : kCategories) w.category_names.emplace_back(c.name);
  for (const Label& s : kSlots) w.comm_slot_names.emplace_back(s.name);
}

}  // namespace

RankParameters stage_layer_parameters(const model::ModelSpec& m, const strategy::ParallelConfig& c,
                                      std::int64_t stage) {
  RankParameters p;
  for (const auto& chunk : strategy::stage_chunks(c, stage))
    for (std::int64_t l = 0; l < chunk.count; ++l) p += layer_parameters_per_rank(m, c, chunk.first + l);
  return p;
}

namespace {

// The weights of `module`'s linears in layer `layer` on one rank:
// attention's QKV and output projections (split over TP), a latent MoE's
// projections (whole on every TP rank), a Mamba mixer's output projection
// (split over TP). Biases are left with the layer (a few in 10^4).
std::int64_t module_weights(const model::ModelSpec& m, const strategy::ParallelConfig& c, std::int64_t layer,
                            strategy::LinearModule module) {
  switch (module) {
    case strategy::LinearModule::Attention: {
      if (!m.has_attention(layer) || m.multi_latent_attention) return 0;
      const std::int64_t q = m.num_attention_heads * m.kv_channels, kv = m.num_query_groups * m.kv_channels;
      return (m.hidden_size * (q + 2 * kv) + q * m.hidden_size) / c.tp;
    }
    case strategy::LinearModule::LatentProjection:
      return m.is_moe_layer(layer) && m.moe_latent_size > 0 ? 2 * m.hidden_size * m.moe_latent_size : 0;
    case strategy::LinearModule::MambaOutProj:
      return m.is_mamba_layer(layer) ? m.mamba_inner() * m.hidden_size / c.tp : 0;
    case strategy::LinearModule::Mtp: return 0;  // not a decoder layer's
  }
  return 0;
}

// Whether a rank of `stage` holds the first virtual stage (the embedding)
// and the last (the output layer and the MTP depths).
struct StageEnds {
  bool embedding = false, output = false;
};
StageEnds stage_ends(const strategy::ParallelConfig& c, std::int64_t stage) {
  StageEnds e;
  const std::int64_t chunks = strategy::chunks_per_stage(c);
  const std::int64_t last = strategy::path_stages(c.schedule, c.pp, chunks) - 1;
  for (std::int64_t k = 0; k < chunks; ++k) {
    const std::int64_t v = strategy::virtual_stage(c.schedule, stage, c.pp, k);
    e.embedding = e.embedding || v == 0;
    e.output = e.output || v == last;
  }
  return e;
}

// Calls `visit` with each layer of `stage` the run quantizes: every one
// but those first_last_layers_bf16 keeps in bf16.
template <typename Visit>
void for_each_quantized_layer(const model::ModelSpec& m, const strategy::ParallelConfig& c, std::int64_t stage,
                              Visit visit) {
  for (const auto& chunk : strategy::stage_chunks(c, stage))
    for (std::int64_t l = chunk.first; l < chunk.first + chunk.count; ++l)
      if (!c.bf16_layer(l, m.num_layers)) visit(l);
}

}  // namespace

RankParameters stage_quantized_layer_parameters(const model::ModelSpec& m, const strategy::ParallelConfig& c,
                                                std::int64_t stage) {
  RankParameters p;
  const auto own_formats_out = [&](std::int64_t l) {
    for (const auto& [module, name] : strategy::kLinearModuleNames)
      if (c.module_precision[static_cast<std::size_t>(module)]) p.dense -= module_weights(m, c, l, module);
  };
  for_each_quantized_layer(m, c, stage, [&](std::int64_t l) {
    p += layer_parameters_per_rank(m, c, l);
    own_formats_out(l);
  });
  // The MTP depths in the run's format: their weights are quantized as the
  // layers' are (Transformer Engine modules like theirs).
  if (c.gemm_dtype() != Dtype::Bf16 && c.mtp_gemm_dtype() == c.gemm_dtype() && stage_ends(c, stage).output) {
    p += mtp_parameters_per_rank(m, c, false);
    for (std::int64_t d = 0; d < m.mtp_weight_sets(); ++d)
      for (const std::int64_t kind : m.mtp_layer_kinds()) own_formats_out(kind);
  }
  return p;
}

std::int64_t stage_module_parameters(const model::ModelSpec& m, const strategy::ParallelConfig& c, std::int64_t stage,
                                     Dtype format) {
  std::int64_t n = 0;
  for_each_quantized_layer(m, c, stage, [&](std::int64_t l) {
    for (const auto& [module, name] : strategy::kLinearModuleNames)
      if (c.module_precision[static_cast<std::size_t>(module)] == format) n += module_weights(m, c, l, module);
  });
  // The MTP depths module_precision gives `format`, whole (their shape
  // takes that format for every linear: mtp_layer_shape).
  if (c.module_precision[static_cast<std::size_t>(strategy::LinearModule::Mtp)] == format &&
      stage_ends(c, stage).output)
    n += mtp_parameters_per_rank(m, c, false).total();
  return n;
}

std::vector<WeightMatrix> stage_weight_matrices(const model::ModelSpec& m, const strategy::ParallelConfig& c,
                                                std::int64_t stage) {
  std::vector<WeightMatrix> w;
  for (const auto& chunk : strategy::stage_chunks(c, stage))
    for (std::int64_t l = 0; l < chunk.count; ++l) {
      const auto layer = layer_weight_matrices(m, c, chunk.first + l);
      w.insert(w.end(), layer.begin(), layer.end());
    }
  if (stage_ends(c, stage).output)
    for (std::int64_t d = 0; d < m.mtp_weight_sets(); ++d) {
      const auto depth = mtp_depth_weight_matrices(m, c);
      w.insert(w.end(), depth.begin(), depth.end());
    }
  return w;
}

// The parameters a rank of `stage` holds: its chunks' layers, the embedding
// on the first virtual stage, the output layer on the last.
RankParameters stage_parameters(const model::ModelSpec& m, const strategy::ParallelConfig& c, std::int64_t stage) {
  RankParameters p = stage_layer_parameters(m, c, stage);
  const auto [embedding, output] = stage_ends(c, stage);
  if (embedding) p.dense += embedding_parameters_per_rank(m, c.tp);
  // A tied head needs its own copy unless the embedding is on the same rank;
  // the MTP depths sit with the head.
  if (output) {
    p.dense += output_parameters_per_rank(m, c.tp, !embedding);
    p += mtp_parameters_per_rank(m, c, !embedding && !m.tie_embeddings);
  }
  return p;
}

StaticMemory stage_static_memory(const model::ModelSpec& model, const strategy::ParallelConfig& c, std::int64_t stage) {
  const RankParameters p = stage_parameters(model, c, stage);
  const std::int64_t mirror = strategy::describe(c.schedule).two_directions ? 2 : 1;
  const StaticMemory dense = static_memory(p.dense, c.zero_stage, c.gradient_group() * mirror, c.gradient_bytes(),
                                           c.fsdp(), c.dense_optimizer_group() * mirror, c.adam_state_bytes());
  const StaticMemory experts =
      static_memory(p.expert, c.zero_stage, c.expert_gradient_group() * mirror, c.gradient_bytes(), c.fsdp(),
                    c.expert_optimizer_group() * mirror, c.adam_state_bytes());
  StaticMemory total{dense.parameters + experts.parameters, dense.params_bytes + experts.params_bytes,
                     dense.grads_bytes + experts.grads_bytes, dense.optimizer_bytes + experts.optimizer_bytes};
  // Muon keeps its momentum beside the fp32 master weight, 8 bytes a weight
  // element where AdamW keeps 12, and AdamW the rest; the layer-wise
  // distributed optimizer keeps the states of the weights a rank updates, a
  // 1/N share of its group's (the ranks' loads balanced).
  if (c.optimizer == strategy::Optimizer::Muon) {
    const RankParameters muon = weight_elements(stage_weight_matrices(model, c, stage));
    const auto states = [&](std::int64_t all, std::int64_t weights, std::int64_t group) {
      const double bytes = 12 * static_cast<double>(all - weights) + 8 * static_cast<double>(weights);
      return static_cast<std::uint64_t>(std::ceil(c.muon_layer_wise ? bytes / static_cast<double>(group) : bytes));
    };
    total.optimizer_bytes = states(p.dense, muon.dense, c.gradient_group() * mirror) +
                            states(p.expert, muon.expert, c.expert_dp() * mirror);
  }
  // FP8 with bf16 parameters: Transformer Engine keeps every layer weight's
  // fp8 copy and its transpose (block-scaled: both copies with their scales;
  // per tensor on a GPU whose FP8 GEMMs take any layout, the copy alone)
  // from the first micro-batch to the last (the is_first_microbatch weight
  // cache, which Megatron-Core uses), about two bytes a weight beside the
  // bf16 one. With --fp8-param-gather (--fp4-param-gather) the quantized
  // copies are the parameter itself, held in place of the bf16 one: its
  // gathered row-wise data and, where the GEMMs need one, the column-wise
  // copy made from it (fp8: 1 + 1 bytes a weight, or 1 where one copy serves
  // both ways; NVFP4: 1/2 + 1/2; block scales left out, as the gather leaves
  // them out). Under MXFP8 the bf16 view lives in the gradient buffer, and
  // the two copies are the parameter. (Under ZeRO-3 the cache would follow
  // the gathered layers; not modelled.)
  const strategy::Quantization q = strategy::quantization_of(c);
  // Megatron-FSDP's FP8 parameters: each layer weight's shard is its
  // quantized copies with their scales, no bf16 one: MXFP8's two (a
  // row-wise one for the forward, a column-wise one for the backward), a
  // per-tensor recipe's one (its transpose made after each gather).
  if (c.megatron_fsdp && c.zero_stage >= 3 && c.fp8_param_gather) {
    const RankParameters layers = stage_layer_parameters(model, c, stage);
    const double shards =
        std::ceil(static_cast<double>(layers.dense) / static_cast<double>(c.gradient_group())) +
        std::ceil(static_cast<double>(layers.expert) / static_cast<double>(c.expert_gradient_group()));
    const double copies = q.per_tensor ? 1 : 2;
    total.params_bytes =
        static_cast<std::uint64_t>(static_cast<double>(total.params_bytes) + (copies * q.copy_bytes - 2) * shards);
  }
  if (!q.active || c.zero_stage >= 3) return total;
  // Layers first_last_layers_bf16 keeps in bf16 have neither, nor the
  // modules module_precision runs in bf16; those it runs in MXFP8 keep
  // MXFP8's two copies (module_precision excludes parameter gathering).
  const double layer_weights = static_cast<double>(stage_quantized_layer_parameters(model, c, stage).total());
  const double mxfp8_weights = static_cast<double>(stage_module_parameters(model, c, stage, Dtype::Mxfp8));
  const strategy::Quantization mx = strategy::module_quantization_of(Dtype::Mxfp8, c.fp8_any_layout);
  if (!c.fp8_param_gather)
    total.params_bytes += static_cast<std::uint64_t>(q.copies() * q.copy_bytes * layer_weights +
                                                     mx.copies() * mx.copy_bytes * mxfp8_weights);
  else if (q.param_gather_quantized())
    total.params_bytes -= static_cast<std::uint64_t>((2 - q.copies() * q.param_gather_bytes) * layer_weights);
  return total;
}

StepWorkload build_step_workload(const model::ModelSpec& model,
                                 const strategy::ParallelConfig& config) {
  StepWorkload step{.workload = {},
                    .model = model,
                    .layout = strategy::RankLayout(config.tp, config.cp, 1, config.dp, config.pp, config.rank_order),
                    .stage_chunks = {},
                    .stage_static_memory = {}};
  step.model.vocab_size = padded_vocab_size(model.vocab_size, config.tp);
  step.num_microbatches = config.num_microbatches();
  step.micro_batch_size = config.micro_batch_size;
  step.tokens_per_step = config.global_batch_size * model.seq_length;

  taskgraph::Workload& w = step.workload;
  w.world_size = config.world_size;
  label(w);
  const bool dualpipe = strategy::describe(config.schedule).two_directions;
  // Tied embeddings, or MTP's lookups on the last stage, keep a word
  // embedding on the first and the last stage, kept in step.
  const bool embedding_group = (model.tie_embeddings || model.mtp_num_layers > 0) && config.pp > 1 && !dualpipe;
  std::optional<strategy::RankLayout> expert;
  if (model.is_moe())
    expert.emplace(config.expert_tp, 1, config.ep, config.expert_dp(), config.pp, config.rank_order);
  internal::add_communicators(config, step.layout, expert ? &*expert : nullptr, embedding_group, w);
  const std::int64_t mirror = dualpipe ? 2 : 1;
  const std::int64_t dense_group = config.gradient_group() * mirror;
  const std::int64_t expert_group = config.expert_gradient_group() * mirror;

  internal::NameTable names;
  w.programs.resize(static_cast<std::size_t>(config.pp));
  for (std::int64_t s = 0; s < config.pp; ++s) {
    internal::StageContext ctx;
    ctx.model = &step.model;
    ctx.config = &config;
    ctx.stage = s;
    ctx.chunks = strategy::stage_chunks(config, s);
    ctx.stage_parameters = stage_parameters(step.model, config, s);
    ctx.quantized_layer_parameters = stage_quantized_layer_parameters(step.model, config, s);
    if (config.optimizer == strategy::Optimizer::Muon)
      ctx.weight_matrices = stage_weight_matrices(step.model, config, s);
    ctx.ddp_bucket_parameters = bucket_parameters(config);
    ctx.embedding_group = embedding_group;
    ctx.dense_group = dense_group;
    ctx.expert_group = expert_group;
    internal::build_stage_program(ctx, names, w.programs[static_cast<std::size_t>(s)]);
    step.stage_chunks.push_back(ctx.chunks);
    step.stage_static_memory.push_back(stage_static_memory(step.model, config, s));
    w.program_base_memory_bytes.push_back(step.stage_static_memory.back().total_bytes());
  }
  w.op_names = names.take();

  w.program_of_rank.resize(static_cast<std::size_t>(config.world_size));
  for (Rank r = 0; r < config.world_size; ++r)
    w.program_of_rank[static_cast<std::size_t>(r)] =
        static_cast<std::uint32_t>(step.layout.coordinate(r, strategy::Axis::Pp));

  // Every stage program runs on tp·cp·dp ranks; a block's FLOPs count once per instance.
  const auto ranks_per_stage = static_cast<double>(config.tp * config.cp * config.dp);
  for (const auto& program : w.programs) {
    std::vector<double> block_model(program.num_blocks(), 0), block_hardware(program.num_blocks(), 0);
    for (std::uint32_t b = 0; b < program.num_blocks(); ++b) {
      const auto& block = program.block(b);
      for (taskgraph::TaskId t = 0; t < block.size(); ++t) {
        const auto& task = block.task(t);
        if (task.category == categories::kForward || task.category == categories::kBackward)
          block_model[b] += task.flops;
        if (task.kind == taskgraph::TaskKind::Compute) block_hardware[b] += task.flops;
      }
    }
    for (const auto& instance : program.instances()) {
      step.model_flops += block_model[instance.block] * ranks_per_stage;
      step.hardware_flops += block_hardware[instance.block] * ranks_per_stage;
    }
  }
  return step;
}

}  // namespace ptsim::workload

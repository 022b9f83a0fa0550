// Composition of a training step's workload (see step_workload.hpp).
#include "ptsim/workload/step_workload.hpp"

#include <algorithm>

#include "internal/communicators.hpp"
#include "internal/name_table.hpp"
#include "internal/stage_program.hpp"

namespace ptsim::workload {

std::int64_t padded_vocab_size(std::int64_t vocab_size, std::int64_t tp) {
  const std::int64_t multiple = 128 * tp;
  return (vocab_size + multiple - 1) / multiple * multiple;
}

namespace {

// Megatron-LM DistributedDataParallelConfig: bucket_size defaults to
// max(40,000,000, 1,000,000 · dp) parameters.
std::int64_t bucket_parameters(const strategy::ParallelConfig& config) {
  return std::max(config.ddp_bucket_parameters, 1'000'000 * config.dp);
}

std::int64_t stage_parameters(const model::ModelSpec& m, const strategy::ParallelConfig& c,
                              const strategy::LayerRange& layers, std::int64_t stage) {
  std::int64_t p = layers.count * layer_parameters_per_rank(m, c.tp);
  if (stage == 0) p += embedding_parameters_per_rank(m, c.tp);
  if (stage == c.pp - 1) p += output_parameters_per_rank(m, c.tp, c.pp);
  return p;
}

void label(taskgraph::Workload& w) {
  w.stream_names = {"compute",          "tp",      "dp",
                    "pp_send_forward",  "pp_recv_forward",
                    "pp_send_backward", "pp_recv_backward", "embedding_grad"};
  // The embedding group exists because pipelining splits the tied input and
  // output embeddings over two stages: its traffic counts as pipeline traffic.
  w.stream_dimension = {"", "tp", "dp", "pp", "pp", "pp", "pp", "pp"};
  w.category_names = {"forward", "backward", "recompute", "optimizer", "tp", "pp", "dp"};
  w.comm_slot_names = {"tp", "dp", "embedding", "pp_forward_send", "pp_forward_recv",
                       "pp_backward_send", "pp_backward_recv"};
}

}  // namespace

StepWorkload build_step_workload(const model::ModelSpec& model,
                                 const strategy::ParallelConfig& config) {
  StepWorkload step{.workload = {},
                    .model = model,
                    .layout = strategy::RankLayout(config.tp, config.dp, config.pp, config.rank_order),
                    .stages = strategy::make_stage_partition(model.num_layers, config.pp),
                    .stage_static_memory = {}};
  step.model.vocab_size = padded_vocab_size(model.vocab_size, config.tp);
  step.num_microbatches = config.num_microbatches();
  step.micro_batch_size = config.micro_batch_size;
  step.tokens_per_step = config.global_batch_size * model.seq_length;

  taskgraph::Workload& w = step.workload;
  w.world_size = config.world_size;
  label(w);
  const bool embedding_group = model.tie_embeddings && config.pp > 1;
  internal::add_communicators(step.layout, embedding_group, w);

  internal::NameTable names;
  w.programs.resize(static_cast<std::size_t>(config.pp));
  for (std::int64_t s = 0; s < config.pp; ++s) {
    internal::StageContext ctx;
    ctx.model = &step.model;
    ctx.config = &config;
    ctx.stage = s;
    ctx.num_stages = config.pp;
    ctx.layers = step.stages[static_cast<std::size_t>(s)];
    ctx.num_microbatches = step.num_microbatches;
    ctx.micro_batch_size = config.micro_batch_size;
    ctx.stage_parameters = stage_parameters(step.model, config, ctx.layers, s);
    ctx.ddp_bucket_parameters = bucket_parameters(config);
    ctx.embedding_group = embedding_group;
    internal::build_stage_program(ctx, names, w.programs[static_cast<std::size_t>(s)]);
    step.stage_static_memory.push_back(static_memory(ctx.stage_parameters));
    w.program_base_memory_bytes.push_back(step.stage_static_memory.back().total_bytes());
  }
  w.op_names = names.take();

  w.program_of_rank.resize(static_cast<std::size_t>(config.world_size));
  for (Rank r = 0; r < config.world_size; ++r)
    w.program_of_rank[static_cast<std::size_t>(r)] =
        static_cast<std::uint32_t>(step.layout.coordinate(r, strategy::Axis::Pp));

  // Every stage program runs on tp·dp ranks; a block's FLOPs count once per instance.
  const auto ranks_per_stage = static_cast<double>(config.tp * config.dp);
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

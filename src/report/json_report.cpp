// StepResult → JSON (see json_report.hpp).
#include "ptsim/report/json_report.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace ptsim::report {

nlohmann::ordered_json breakdown_json(const Breakdown& b) {
  return {{"compute", b.compute_s},
          {"exposed_communication", b.exposed_communication_s},
          {"pipeline_bubble", b.pipeline_bubble_s},
          {"host_issue", b.host_issue_s},
          {"optimizer", b.optimizer_s}};
}

namespace {

// Under selective recomputation the modules rerun, Megatron-Core's names
// (an empty list: nothing); null otherwise.
nlohmann::ordered_json recompute_modules_json(const StepResult& r) {
  if (r.recompute != "selective") return nullptr;
  return r.recompute_modules;
}

}  // namespace

void write_json(const StepResult& r, std::ostream& out) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["schema_version"] = kSchemaVersion;
  j["run"] = {{"model", r.model_name},
              {"hardware", r.hardware_name},
              {"gpu", r.gpu_name},
              {"gpus", r.gpus},
              {"nodes", r.nodes},
              {"tp", r.tp},
              {"pp", r.pp},
              {"dp", r.dp},
              {"cp", r.cp},
              {"ep", r.ep},
              {"expert_tp", r.expert_tp},
              {"vpp", r.vpp},
              {"sequence_parallel", r.sequence_parallel},
              {"zero_stage", r.zero_stage},
              {"megatron_fsdp", r.megatron_fsdp},
              {"optimizer_instances", r.optimizer_instances},
              {"outer_dp_sharding_strategy", r.outer_optimizer_sharding ? "optim" : "no_shard"},
              {"offload_modules", r.offload_modules},
              {"precision", r.precision},
              {"num_layers_at_start_in_bf16", r.bf16_layers_at_start},
              {"num_layers_at_end_in_bf16", r.bf16_layers_at_end},
              {"module_precision", r.module_precision},
              {"fp8_recipe", r.fp8_recipe.empty() ? nlohmann::json() : nlohmann::json(r.fp8_recipe)},
              {"fp8_dot_product_attention", r.fp8_attention},
              {"micro_batch_size", r.micro_batch_size},
              {"num_microbatches", r.num_microbatches},
              {"global_batch_size", r.global_batch_size},
              {"seq_length", r.seq_length},
              {"schedule", r.schedule},
              {"recompute", r.recompute},
              {"recompute_modules", recompute_modules_json(r)},
              {"host_overhead_us", r.host_overhead_s * 1e6},
              {"cuda_graph_impl", r.cuda_graph_impl},
              {"cuda_graph_modules", r.cuda_graph_modules},
              {"parameters", r.parameters},
              {"active_parameters", r.active_parameters},
              {"model_flops_per_step", r.model_flops_per_step}};
  j["step_time_s"] = r.step_time_s;
  j["critical_rank"] = r.critical_rank;
  j["critical_stage"] = r.critical_stage;
  j["breakdown_s"] = breakdown_json(r.breakdown);
  j["breakdown_detail_s"] = {{"recompute", r.breakdown.recompute_s}};
  j["throughput"] = {{"tokens_per_s", r.throughput.tokens_per_s},
                     {"model_tflops_per_gpu", r.throughput.model_tflops_per_gpu},
                     {"hardware_tflops_per_gpu", r.throughput.hardware_tflops_per_gpu},
                     {"mfu", r.throughput.mfu}};
  ordered_json stages = ordered_json::array();
  for (const auto& s : r.stages) {
    ordered_json exposed = ordered_json::object();
    for (const auto& [dim, t] : s.exposed_s) exposed[dim] = t;
    stages.push_back({{"stage", s.stage},
                      {"peak_bytes", s.peak_bytes},
                      {"static_bytes", s.static_bytes},
                      {"activations_peak_bytes", s.activations_peak_bytes},
                      {"breakdown_s", breakdown_json(s.breakdown)},
                      {"exposed_communication_s", exposed}});
  }
  j["memory"] = {{"peak_bytes", r.memory.peak_bytes},
                 {"capacity_bytes", r.memory.capacity_bytes},
                 {"headroom_bytes", r.memory.headroom_bytes},
                 {"fits", r.memory.fits},
                 {"params_bytes", r.memory.params_bytes},
                 {"grads_bytes", r.memory.grads_bytes},
                 {"optimizer_bytes", r.memory.optimizer_bytes},
                 {"activations_peak_bytes", r.memory.activations_peak_bytes},
                 {"peak_rank", r.memory.peak_rank},
                 {"peak_stage", r.memory.peak_stage},
                 {"stages", stages}};
  ordered_json comm = ordered_json::object();
  for (const char* dim : kDimensions) {
    const auto it = r.communication.find(dim);
    const DimensionCommunication d = it == r.communication.end() ? DimensionCommunication{} : it->second;
    comm[dim] = {{"bytes", d.bytes}, {"bus_bytes", d.bus_bytes}, {"time_s", d.time_s}, {"exposed_s", d.exposed_s}};
  }
  j["communication"] = comm;
  ordered_json sim = {{"events", r.simulation.events}, {"tasks", r.simulation.tasks}};
  if (r.simulation.wall_s) sim["wall_s"] = *r.simulation.wall_s;  // only with --timing
  sim["mode"] = r.simulation.mode;
  sim["ranks_simulated"] = r.simulation.ranks_simulated;
  sim["fingerprint"] = fmt::format("{:016x}", r.simulation.fingerprint);
  j["simulation"] = sim;
  out << j.dump(2) << '\n';
}

}  // namespace ptsim::report

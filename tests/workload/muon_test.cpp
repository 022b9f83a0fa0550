// Muon as Megatron-Core runs it (workload/muon_step.cpp): the weights it
// orthogonalizes, the Newton-Schulz GEMMs' FLOPs, its optimizer state, and
// the layer-wise distributed optimizer's share, against hand counts from
// emerging_optimizers' newton_schulz and Megatron-Core's optimizer code.
#include <algorithm>
#include <cmath>
#include <string>

#include "ptsim/common/error.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "ptsim/workload/stage_parameters.hpp"
#include "ptsim/workload/step_workload.hpp"
#include "test_support.hpp"
#include "workload/internal/muon_update.hpp"

using namespace ptsim;

namespace {

double weight_elements(const std::vector<workload::WeightMatrix>& w, bool expert) {
  double n = 0;
  for (const auto& m : w)
    if (m.expert == expert) n += m.elements();
  return n;
}

// Newton-Schulz FLOPs of one quintic iteration on an r × c weight, m ≤ n:
// X·Xᵀ (2m²n), A·A (2m³), B·X (2m²n).
double ns_step_flops(double r, double c) {
  const double m = std::min(r, c), n = std::max(r, c);
  return 4 * m * m * n + 2 * m * m * m;
}

config::StrategyInput llama_run(const std::string& optimizer) {
  config::StrategyInput s;
  s.gpus = 8;
  s.global_batch_size = 8;
  s.micro_batch_size = 1;
  s.optimizer = optimizer;
  return s;
}

}  // namespace

TEST_CASE("Muon's weights are every 2-D parameter of a layer but norms and biases", "[workload][muon]") {
  strategy::ParallelConfig c;
  SECTION("GPT with biases and LayerNorm, TP 1") {
    const auto m = test::shipped_model("tiny");  // h 256, ffn 1024, LayerNorm, biases
    const double h = 256;
    const auto w = workload::layer_weight_matrices(m, c, 0);
    // Two LayerNorms (weight and bias, 4h) and the biases of QKV (3h),
    // the projection (h), fc1 (4h) and fc2 (h): 13h.
    const double rest =
        static_cast<double>(workload::layer_parameters_per_rank(m, c, 0).dense) - weight_elements(w, false);
    CHECK(rest == 13 * h);
    CHECK(w.size() == 6);  // q, k, v apart (muon_split_qkv), proj, fc1, fc2
  }
  SECTION("Kimi K2's MoE layer, EP 64") {
    const auto m = test::shipped_model("kimi-k2");
    c.ep = 64;
    const auto p = workload::layer_parameters_per_rank(m, c, 5);
    const auto w = workload::layer_weight_matrices(m, c, 5);
    // No biases: two RMSNorms (2h) and MLA's latent norms (q_lora + kv_lora).
    CHECK(static_cast<double>(p.dense) - weight_elements(w, false) == 2 * 7168 + 1536 + 512);
    CHECK(static_cast<double>(p.expert) == weight_elements(w, true));
    // Six local experts' fc1 (2·2048 × 7168) and fc2 (7168 × 2048).
    CHECK(weight_elements(w, true) == 6 * 3.0 * 2048 * 7168);
  }
}

TEST_CASE("Newton-Schulz runs three bf16 GEMMs an iteration on every weight", "[workload][muon]") {
  auto m = test::shipped_model("llama3-8b");
  m.num_layers = 2;
  const double h = 4096, kv = 1024, f = 14336, V = 128256;
  // q and the projection h × h; k and v kv × h; fc1 2f × h; fc2 h × f.
  const double per_iteration =
      2 * ns_step_flops(h, h) + 2 * ns_step_flops(kv, h) + ns_step_flops(2 * f, h) + ns_step_flops(h, f);
  for (const std::int64_t steps : {5, 2}) {
    auto s = llama_run("muon");
    s.muon_num_ns_steps = steps;
    const auto run = config::resolve_run(m, s);
    const auto step = workload::build_step_workload(run.model, run.parallel);
    const double flops = test::task_total(step, 0, "muon.ns.", [](const taskgraph::Task& t) { return t.flops; });
    CHECK(flops == Approx(2 * static_cast<double>(steps) * per_iteration));
    // AdamW takes the rest: the embedding, the output layer (untied) and the norms.
    const double adam_parameters = 2 * V * h + 2 * 2 * h + h;
    CHECK(test::task_total(step, 0, "optimizer.adam", [](const taskgraph::Task& t) {
            return static_cast<double>(t.bytes);
          }) == Approx((24 + 4 + 2) * adam_parameters));
  }
}

TEST_CASE("Muon keeps 8 bytes of state a weight element where AdamW keeps 12 and the layer-wise optimizer a 1/N share",
          "[workload][muon]") {
  auto m = test::shipped_model("llama3-8b");
  m.num_layers = 2;
  const auto adam = config::resolve_run(m, llama_run("adam"));
  const auto muon = config::resolve_run(m, llama_run("muon"));
  const auto layer_wise = config::resolve_run(m, llama_run("dist_muon"));
  CHECK(layer_wise.parallel.muon_layer_wise);
  const double all =
      static_cast<double>(workload::stage_parameters(test::padded_model(adam), adam.parallel, 0).total());
  const double weights =
      weight_elements(workload::stage_weight_matrices(test::padded_model(muon), muon.parallel, 0), false);
  CHECK(static_cast<double>(
            workload::stage_static_memory(test::padded_model(adam), adam.parallel, 0).optimizer_bytes) == 12 * all);
  CHECK(
      static_cast<double>(workload::stage_static_memory(test::padded_model(muon), muon.parallel, 0).optimizer_bytes) ==
      12 * (all - weights) + 8 * weights);
  CHECK(static_cast<double>(
            workload::stage_static_memory(test::padded_model(layer_wise), layer_wise.parallel, 0).optimizer_bytes) ==
        Approx((12 * (all - weights) + 8 * weights) / 8).epsilon(1e-9));
}

TEST_CASE("The layer-wise optimizer's busiest rank gets the largest cost first dealt", "[workload][muon]") {
  using workload::WeightMatrix;
  // Ten identical weights over four ranks: the busiest holds three.
  const WeightMatrix ten{64, 128, -1, 1, false, 10};
  auto share = workload::internal::muon_updated_weights({ten}, true, 4, 1);
  REQUIRE(share.size() == 1);
  CHECK(share[0].count == 3);
  // One large weight (cost 512³) and eight small ones (cost 64²·128 each)
  // over two ranks: the large alone on one, the small on the other, which
  // is lighter; the busiest rank updates the large one.
  const WeightMatrix large{512, 512, -1, 1, false, 1};
  const WeightMatrix small{64, 128, -1, 1, false, 8};
  share = workload::internal::muon_updated_weights({small, large}, true, 2, 1);
  REQUIRE(share.size() == 1);
  CHECK(share[0].rows == 512);
  // Without the layer-wise optimizer every rank updates everything.
  share = workload::internal::muon_updated_weights({small, large}, false, 2, 1);
  CHECK(share.size() == 2);
}

TEST_CASE("Duplicated TP mode gathers a split weight's fp32 shards and iterates on the whole", "[workload][muon]") {
  const workload::WeightMatrix column{1024, 4096, 0, 4, false, 1};  // a column-parallel shard of 4096 × 4096
  const auto count = [](const std::vector<workload::OpSpec>& ops, workload::OpKind kind) {
    return std::count_if(ops.begin(), ops.end(), [&](const auto& op) { return op.kind == kind; });
  };
  const auto duplicated = workload::internal::muon_update_ops(column, 5, true);
  const auto blockwise = workload::internal::muon_update_ops(column, 5, false);
  CHECK(count(duplicated, workload::OpKind::Collective) == 1);
  CHECK(count(blockwise, workload::OpKind::Collective) == 0);
  double whole = 0, shard = 0;
  for (const auto& op : duplicated) {
    if (op.kind == workload::OpKind::Collective) CHECK(static_cast<double>(op.bytes) == 4.0 * 4096 * 4096);
    if (op.kind == workload::OpKind::Matmul) whole += op.flops;
  }
  for (const auto& op : blockwise)
    if (op.kind == workload::OpKind::Matmul) shard += op.flops;
  CHECK(whole == Approx(5 * ns_step_flops(4096, 4096)));
  CHECK(shard == Approx(5 * ns_step_flops(1024, 4096)));
}

TEST_CASE("Muon's refusals name what is not modelled", "[workload][muon][config]") {
  const auto m = test::shipped_model("llama3-8b");
  auto s = llama_run("dist_muon");
  s.distributed_optimizer = true;
  CHECK_THROWS_AS(config::resolve_run(m, s), ConfigError);  // Megatron-Core names that muon
  s = llama_run("muon");
  s.fsdp = "fsdp2";
  CHECK_THROWS_AS(config::resolve_run(m, s), ConfigError);
  s = llama_run("adam");
  s.muon_num_ns_steps = 3;
  CHECK_THROWS_AS(config::resolve_run(m, s), ConfigError);
  s = llama_run("muon");
  s.distributed_optimizer = true;
  const auto run = config::resolve_run(m, s);
  CHECK(run.parallel.muon_layer_wise);
  CHECK(run.parallel.zero_stage == 1);
}

// Megatron-Core's precision-aware optimizer (config/resolve_run.cpp,
// workload/stage_parameters.cpp): the bytes of AdamW's state a parameter
// keeps in the distributed optimizer's shards, and the bytes its step moves,
// against hand counts from Megatron-Core's optimizer code (d98e8a64dd:
// optimizer/__init__.py, optimizer_config.py) and Transformer Engine's
// FusedAdam (store_param_remainders: an fp32 master weight of a bf16
// parameter kept as its low 16 bits).
#include <string>

#include "ptsim/common/error.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "ptsim/workload/stage_parameters.hpp"
#include "ptsim/workload/step_workload.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

config::StrategyInput distributed_run() {
  config::StrategyInput s;
  s.gpus = 8;
  s.global_batch_size = 8;
  s.micro_batch_size = 1;
  s.distributed_optimizer = true;
  return s;
}

double shard_parameters(const config::ResolvedRun& r) {
  const double all = static_cast<double>(workload::stage_parameters(test::padded_model(r), r.parallel, 0).total());
  return all / static_cast<double>(r.parallel.gradient_group());
}

double optimizer_bytes(const config::ResolvedRun& r) {
  return static_cast<double>(workload::stage_static_memory(test::padded_model(r), r.parallel, 0).optimizer_bytes);
}

}  // namespace

TEST_CASE("The precision-aware optimizer keeps the bytes its dtypes say in each shard", "[workload][optimizer]") {
  auto m = test::shipped_model("llama3-8b");
  m.num_layers = 2;
  const auto plain = config::resolve_run(m, distributed_run());
  const double shard = shard_parameters(plain);
  REQUIRE(plain.parallel.gradient_group() == 8);
  // Without it: fp32 master weight and two fp32 moments, 12 bytes.
  CHECK(optimizer_bytes(plain) == Approx(12 * shard).epsilon(1e-6));

  // Each case: precision, FP8 recipe, master weight, first and second
  // moment as the flags give them, fp8 parameters or not, and the bytes a parameter they make.
  struct Case {
    const char* precision;
    const char* recipe;
    const char* main;
    const char* exp_avg;
    const char* exp_avg_sq;
    bool fp8_param_gather;
    double bytes;
  };
  const Case cases[] = {
      // bf16 parameters, fp32 master weight and moments: the master weight as
      // its 16 remainder bits, 2 + 4 + 4 (NeMo's Apex DistributedFusedAdam keeps
      // the same, store_param_remainders).
      {"bf16", "delayed", "fp32", "fp32", "fp32", false, 10},
      // bf16 moments, as Megatron-Bridge's DeepSeek recipes set them.
      {"bf16", "delayed", "fp32", "bf16", "bf16", false, 6},
      // fp8 moments and an fp16 master weight.
      {"bf16", "delayed", "fp16", "fp8", "fp8", false, 4},
      // MXFP8: Megatron-Core keeps the fp32 master weight whole.
      {"fp8", "mxfp8", "fp32", "bf16", "bf16", false, 8},
      // FP8 delayed scaling: Transformer Engine holds it, as remainders.
      {"fp8", "delayed", "fp32", "fp32", "fp32", false, 10},
      // Remainders need the parameter's own bf16 bits: with fp8 parameters
      // (--fp8-param-gather) Transformer Engine keeps the fp32 master whole.
      {"fp8", "delayed", "fp32", "fp32", "fp32", true, 12},
  };
  for (const Case& k : cases) {
    CAPTURE(k.precision, k.recipe, k.main, k.exp_avg, k.exp_avg_sq, k.fp8_param_gather);
    auto s = distributed_run();
    s.precision_aware_optimizer = true;
    s.precision = k.precision;
    if (std::string(k.precision) == "fp8") s.fp8_recipe = k.recipe;
    s.main_params_dtype = k.main;
    s.exp_avg_dtype = k.exp_avg;
    s.exp_avg_sq_dtype = k.exp_avg_sq;
    if (k.fp8_param_gather) s.fp8_param_gather = true;
    CHECK(optimizer_bytes(config::resolve_run(m, s)) == Approx(k.bytes * shard).epsilon(1e-6));
  }
}

TEST_CASE("The precision-aware optimizer's step reads and writes its narrower states", "[workload][optimizer]") {
  auto m = test::shipped_model("llama3-8b");
  m.num_layers = 2;
  auto s = distributed_run();
  s.precision_aware_optimizer = true;
  s.exp_avg_dtype = "bf16";
  s.exp_avg_sq_dtype = "bf16";
  const auto run = config::resolve_run(m, s);
  const auto step = workload::build_step_workload(run.model, run.parallel);
  // Read and write the 6 bytes of state, read the fp32 gradient (4), write
  // the bf16 weight (2): 18 bytes a parameter of the shard, against 30.
  CHECK(test::task_total(step, 0, "optimizer.adam", [](const taskgraph::Task& t) {
          return static_cast<double>(t.bytes);
        }) == Approx(18 * shard_parameters(run)).epsilon(1e-6));
}

TEST_CASE("The precision-aware optimizer's dtypes are refused where they do not apply", "[workload][optimizer]") {
  auto m = test::shipped_model("llama3-8b");
  m.num_layers = 2;
  SECTION("a dtype without the optimizer") {
    auto s = distributed_run();
    s.exp_avg_dtype = "bf16";
    CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains("--exp-avg-dtype = bf16") &&
                                                     Catch::Contains("add --use-precision-aware-optimizer"));
  }
  SECTION("the optimizer without the distributed optimizer") {
    config::StrategyInput s;
    s.gpus = 8;
    s.global_batch_size = 8;
    s.precision_aware_optimizer = true;
    CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains("--use-precision-aware-optimizer") &&
                                                     Catch::Contains("add --use-distributed-optimizer"));
  }
  SECTION("with Muon") {
    auto s = distributed_run();
    s.precision_aware_optimizer = true;
    s.optimizer = "muon";
    CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains("Muon"));
  }
}

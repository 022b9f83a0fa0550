// Strategy defaults and every inconsistency the checks stop before simulation.
#include "ptsim/config/resolve_run.hpp"

#include <nlohmann/json.hpp>

#include "ptsim/common/error.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {
config::StrategyInput base() {
  config::StrategyInput s;
  s.gpus = 1024;
  s.tp = 8;
  s.pp = 8;
  s.global_batch_size = 1536;
  return s;
}

config::ResolvedRun resolve(const config::StrategyInput& s) {
  return config::resolve_run(test::shipped_model("gpt3-175b"), s);
}

std::string write_strategy(const std::string& name, const std::string& text) {
  return test::write_scratch("generated-" + name, text);
}
}  // namespace

TEST_CASE("DP is derived from the world size and defaults are Megatron's", "[config]") {
  const auto run = resolve(base());
  CHECK(run.parallel.dp == 16);
  CHECK(run.parallel.micro_batch_size == 1);
  CHECK(run.parallel.num_microbatches() == 96);  // 1536 / (1 · 16)
  CHECK(run.parallel.schedule == strategy::ScheduleKind::OneFOneB);
  CHECK(run.model.seq_length == 2048);
  auto s = base();
  s.seq_length = 4096;
  CHECK(resolve(s).model.seq_length == 4096);
  s.gpus.reset();
  s.dp = 4;
  CHECK(resolve(s).parallel.world_size == 256);
}

TEST_CASE("Naive model parallelism runs the per-replica batch as one micro-batch", "[config]") {
  auto s = base();
  s.schedule = "naive";
  const auto run = resolve(s);
  CHECK(run.parallel.micro_batch_size == 96);
  CHECK(run.parallel.num_microbatches() == 1);
  s.micro_batch_size = 4;
  CHECK_THROWS_WITH(resolve(s), Catch::Contains("--micro-batch-size = 4 conflicts with "
                                                "--schedule naive") &&
                                    Catch::Contains("omit --micro-batch-size or set it to 96"));
}

TEST_CASE("Inconsistent strategies are rejected with the rule and the fix", "[config]") {
  auto s = base();
  SECTION("world size is not tp·pp·dp") {
    s.dp = 8;
    CHECK_THROWS_WITH(resolve(s), Catch::Contains("--data-parallel-size/--dp = 8 does not match "
                                                  "the world size: gpus = 1024 ≠ tp·pp·dp = "
                                                  "8·8·8 = 512") &&
                                      Catch::Contains("set --dp 16 or omit --dp"));
  }
  SECTION("GPUs not a multiple of tp·pp") {
    s.gpus = 1000;
    CHECK_THROWS_WITH(resolve(s), Catch::Contains("--gpus = 1000 is not a multiple of tp·pp = 8·8 = 64"));
  }
  SECTION("heads not divisible by tp") {
    s.tp = 5;
    s.gpus = 320;
    CHECK_THROWS_WITH(resolve(s), Catch::Contains("--tensor-model-parallel-size/--tp = 5 must "
                                                  "divide num_attention_heads = 96 (model GPT-3 175B)") &&
                                      Catch::Contains("choose one of 1, 2, 3, 4, 6, 8"));
  }
  SECTION("query groups not divisible by tp") {
    config::StrategyInput l;
    l.gpus = 16;
    l.tp = 16;
    l.global_batch_size = 16;
    CHECK_THROWS_WITH(config::resolve_run(test::shipped_model("llama3-70b"), l),
                      Catch::Contains("must divide num_query_groups = 8"));
  }
  SECTION("fewer layers than stages") {
    s.pp = 128;
    s.tp = 1;
    s.gpus = 128;
    s.global_batch_size = 8;
    CHECK_THROWS_WITH(resolve(s), Catch::Contains("--pipeline-model-parallel-size/--pp = 128 "
                                                  "exceeds num_layers = 96"));
  }
  SECTION("global batch not divisible by micro-batch · dp") {
    s.micro_batch_size = 5;
    CHECK_THROWS_WITH(resolve(s), Catch::Contains("--global-batch-size = 1536 is not divisible "
                                                  "by micro_batch_size·dp = 5·16 = 80"));
  }
  SECTION("global batch not divisible by dp") {
    s.global_batch_size = 100;
    CHECK_THROWS_WITH(resolve(s), Catch::Contains("--global-batch-size = 100 is not divisible by dp = 16"));
  }
  SECTION("no GPU count") {
    s.gpus.reset();
    CHECK_THROWS_WITH(resolve(s), Catch::Contains("the number of GPUs is not set"));
  }
  SECTION("no global batch") {
    s.global_batch_size.reset();
    CHECK_THROWS_WITH(resolve(s), Catch::Contains("the global batch size is not set"));
  }
  SECTION("absurd GPU count") {
    s.gpus = std::int64_t{1} << 40;
    CHECK_THROWS_WITH(resolve(s), Catch::Contains("--gpus = 1099511627776 must lie in [1, 16777216]"));
  }
  SECTION("zero micro-batch") {
    s.micro_batch_size = 0;
    CHECK_THROWS_WITH(resolve(s), Catch::Contains("--micro-batch-size = 0 must lie in"));
  }
  SECTION("unknown schedule") {
    s.schedule = "pipedream";
    CHECK_THROWS_WITH(resolve(s), Catch::Contains("--schedule = pipedream is not one of naive, gpipe, 1f1b, "
                                                  "interleaved, zb-h1, zb-h2, dualpipe"));
  }
  SECTION("unknown recompute mode") {
    s.recompute = "some";
    CHECK_THROWS_WITH(resolve(s), Catch::Contains("--recompute = some is not one of none, selective, full"));
  }
}

TEST_CASE("Strategy files use the flags' keys and are checked strictly", "[config]") {
  const auto good = write_strategy("good.json",
                                   R"({"gpus": 64, "tensor_model_parallel_size": 8, "pp": 2,
                                       "global_batch_size": 64, "schedule": "gpipe"})");
  const auto s = config::load_strategy(good, test::unchecked_inputs());
  CHECK(*s.tp == 8);
  CHECK(*s.pp == 2);
  CHECK(*s.schedule == "gpipe");
  // Flags override the file; errors then name the flag.
  config::StrategyInput flags;
  flags.tp = 5;
  flags.origin["tp"] = "--tp";
  CHECK_THROWS_WITH(resolve(config::merge(s, flags)), Catch::StartsWith("--tp = 5 must divide"));
  // Errors about values from the file name the file and key.
  auto from_file = s;
  from_file.tp = 7;
  CHECK_THROWS_WITH(resolve(from_file), Catch::Contains("generated-good.json: /tensor_model_parallel_size = 7 must divide"));

  CHECK_THROWS_WITH(config::load_strategy(write_strategy("unknown.json", R"({"tp": 2, "tpp": 3})"),
                                          test::unchecked_inputs()),
                    Catch::Contains("unknown key 'tpp'"));
  CHECK_THROWS_WITH(config::load_strategy(write_strategy("twice.json", R"({"tp": 2, "tensor_model_parallel_size": 2})"),
                                          test::unchecked_inputs()),
                    Catch::Contains("/tp = 2 repeats tensor_model_parallel_size"));
  CHECK_THROWS_WITH(config::load_strategy(write_strategy("enum.json", R"({"schedule": "zb"})"),
                                          test::unchecked_inputs()),
                    Catch::Contains("/schedule = \"zb\" is not one of the accepted values: naive, gpipe, 1f1b"));
  CHECK_THROWS_WITH(config::load_strategy(write_strategy("type.json", R"({"gpus": "8"})"), test::unchecked_inputs()),
                    Catch::Contains("/gpus = \"8\" must be an integer"));
}

TEST_CASE("Issue 5's flags refuse their invalid combinations with the rule and the fix", "[config]") {
  const auto gpt3 = test::shipped_model("gpt3-175b");
  const auto moe = test::shipped_model("mixtral-8x7b");
  const auto fails = [](const model::ModelSpec& m, const config::StrategyInput& s, const std::string& text) {
    INFO(text);
    CHECK_THROWS_WITH(config::resolve_run(m, s), Catch::Contains(text));
  };
  // The MoE model on `gpus` GPUs with expert parallelism `ep`, a sequence a GPU.
  const auto moe_on = [](std::int64_t gpus, std::int64_t ep) {
    config::StrategyInput m;
    m.gpus = gpus;
    m.ep = ep;
    m.global_batch_size = gpus;
    return m;
  };
  SECTION("an FP8 recipe without FP8") {
    auto s = base();
    s.fp8_recipe = "tensorwise";
    fails(gpt3, s, "--fp8-recipe = tensorwise needs precision fp8 (precision is bf16)");
    s.precision = "fp8";
    CHECK(config::resolve_run(gpt3, s).parallel.fp8_recipe == strategy::Fp8Recipe::Tensorwise);
    s.fp8_recipe.reset();
    CHECK(config::resolve_run(gpt3, s).parallel.fp8_recipe == strategy::Fp8Recipe::Delayed);
  }
  SECTION("flash-attn's cross-entropy: one loss kernel a run, outside torchtitan's modules") {
    auto s = base();
    s.flash_attn_cross_entropy = true;
    CHECK(config::resolve_run(gpt3, s).parallel.loss_kernel == strategy::LossKernel::FlashAttn);
    s.cross_entropy_loss_fusion = true;
    fails(gpt3, s, "contradicts --cross-entropy-loss-fusion");
    s.cross_entropy_loss_fusion.reset();
    s.kernel_fusion = "eager";
    fails(gpt3, s, "whose loss is torchtitan's F.cross_entropy");
    s.flash_attn_cross_entropy.reset();
    s.cross_entropy_loss_fusion = true;
    s.kernel_fusion.reset();
    CHECK(config::resolve_run(gpt3, s).parallel.loss_kernel == strategy::LossKernel::TransformerEngine);
  }
  SECTION("TP communication overlap with blockwise scaling, which Transformer Engine's userbuffers refuse") {
    auto s = base();
    s.precision = "fp8";
    s.fp8_recipe = "blockwise";
    s.sequence_parallel = true;
    s.tp_comm_overlap = true;
    fails(gpt3, s, "cannot carry blockwise-scaled tensors");
    s.fp8_recipe = "mxfp8";
    CHECK(config::resolve_run(gpt3, s).parallel.tp_comm_overlap);
    CHECK(config::resolve_run(gpt3, s).parallel.gemm_dtype() == Dtype::Mxfp8);
  }
  SECTION("FP4 training: its flags need it, it excludes FP8, and userbuffers cannot carry it") {
    auto s = base();
    s.fp4_recipe = "nvfp4";
    fails(gpt3, s, "--fp4-recipe = nvfp4 needs FP4 training (precision is bf16)");
    s.fp4_format = "e2m1";
    CHECK(config::resolve_run(gpt3, s).parallel.precision == Dtype::Nvfp4);
    CHECK(config::resolve_run(gpt3, s).parallel.gemm_dtype() == Dtype::Nvfp4);
    s.precision = "fp8";
    fails(gpt3, s, "trains in FP4, which excludes precision fp8");
    s.precision.reset();
    s.sequence_parallel = true;
    s.tp_comm_overlap = true;
    fails(gpt3, s, "cannot carry nvfp4-scaled tensors");
    auto g = base();
    g.fp4_param_gather = true;
    g.distributed_optimizer = true;
    fails(gpt3, g, "--fp4-param-gather needs FP4 training");
    g.precision = "nvfp4";
    CHECK(config::resolve_run(gpt3, g).parallel.fp8_param_gather);
  }
  SECTION("FP8 parameter gathering without FP8 or without the distributed optimizer") {
    auto s = base();
    s.fp8_param_gather = true;
    fails(gpt3, s, "--fp8-param-gather needs FP8 training");
    s.precision = "fp8";
    fails(gpt3, s, "--fp8-param-gather needs Megatron's distributed optimizer");
    s.distributed_optimizer = true;
    CHECK(config::resolve_run(gpt3, s).parallel.fp8_param_gather);
  }
  SECTION("vpp without pipeline parallelism") {
    auto s = base();
    s.pp = 1;
    s.vpp = 2;
    fails(gpt3, s, "--virtual-pipeline-model-parallel-size/--vpp = 2 needs pipeline parallelism");
  }
  SECTION("interleaved schedule without chunks, chunks with another schedule") {
    auto s = base();
    s.schedule = "interleaved";
    fails(gpt3, s, "needs several model chunks per stage; give --virtual-pipeline-model-parallel-size");
    s.schedule = "zb-h1";
    s.vpp = 2;
    fails(gpt3, s, "--schedule = zb-h1 cannot run vpp = 2 model chunks per stage");
  }
  SECTION("interleaved micro-batches not a multiple of pp") {
    auto s = base();
    s.vpp = 2;
    s.global_batch_size = 16 * 12;  // 12 micro-batches over pp = 8
    fails(gpt3, s, "gives 12 micro-batches, not a multiple of pp = 8");
  }
  SECTION("cp not splitting the sequence into 2·cp chunks") {
    auto s = base();
    s.cp = 3;
    s.gpus = 8 * 8 * 3;
    fails(gpt3, s, "--context-parallel-size/--cp = 3 must split seq_length = 2048 into 2·cp equal chunks");
  }
  SECTION("cp with unfused attention") {
    auto s = base();
    s.cp = 2;
    s.attention_backend = "unfused";
    fails(gpt3, s, "needs fused attention");
  }
  SECTION("ep on a dense model, ep not dividing the experts") {
    auto s = base();
    s.ep = 2;
    fails(gpt3, s, "--expert-model-parallel-size/--ep = 2 needs a mixture-of-experts model");
    fails(moe, moe_on(48, 3), "--expert-model-parallel-size/--ep = 3 must divide num_moe_experts = 8");
  }
  SECTION("an SM count for a dispatcher that runs no DeepEP or HybridEP kernels") {
    auto m = moe_on(8, 8);
    m.moe_flex_dispatcher_num_sms = 32;
    fails(moe, m, "--moe-flex-dispatcher-num-sms = 32 needs --moe-token-dispatcher-type flex");
    m.moe_token_dispatcher_type = "flex";
    CHECK(config::resolve_run(moe, m).parallel.moe_flex_num_sms == 32);
  }
  SECTION("MoE with TP needs sequence parallelism") {
    auto m = moe_on(16, 8);
    m.tp = 2;
    fails(moe, m, "with a mixture-of-experts model needs --sequence-parallel");
  }
  SECTION("sequence parallelism without TP") {
    auto s = base();
    s.tp = 1;
    s.sequence_parallel = true;
    fails(gpt3, s, "--sequence-parallel needs tensor parallelism");
  }
  SECTION("DualPipe with an odd pipeline or too few micro-batches") {
    auto s = base();
    s.schedule = "dualpipe";
    s.pp = 3;
    s.gpus = 8 * 3 * 4;
    s.global_batch_size = 64;
    fails(gpt3, s, "--pipeline-model-parallel-size/--pp = 3 must be even for --schedule dualpipe");
    s.pp = 8;
    s.gpus = 8 * 8 * 2;
    s.global_batch_size = 2 * 14;  // 14 micro-batches < 2·pp
    fails(gpt3, s, "DualPipe needs an even number, at least 2·pp = 16");
  }
  SECTION("recomputation details and ZeRO options that need their base") {
    auto s = base();
    s.recompute_num_layers = 2;
    fails(gpt3, s, "--recompute-num-layers = 2 needs --recompute full");
    s = base();
    s.overlap_param_gather = true;
    fails(gpt3, s, "--overlap-param-gather needs sharded parameters or optimizer states");
    s = base();
    s.zero = 2;
    s.distributed_optimizer = true;
    fails(gpt3, s, "--zero = 2 contradicts --use-distributed-optimizer");
  }
  SECTION("first and last stage layers leaving too few for the rest") {
    auto s = base();
    s.first_stage_layers = 60;
    s.last_stage_layers = 40;
    fails(gpt3, s, "makes the first and last stages take 100 layers, more than num_layers = 96");
    s.first_stage_layers = 50;
    s.last_stage_layers = 41;
    fails(gpt3, s, "leaves 5 layers for the other 6 stages of num_layers = 96");
  }
}

TEST_CASE("The recompute_modules say what selective recomputation reruns", "[config][recompute]") {
  auto s = base();
  // Megatron-Core's default: core attention.
  s.recompute = "selective";
  CHECK(resolve(s).parallel.recompute_modules == strategy::kRecomputeCoreAttn);
  // Given alone, the modules ask for selective recomputation.
  s = base();
  s.recompute_modules = "layernorm, mlp";
  const auto run = resolve(s);
  CHECK(run.parallel.recompute == strategy::RecomputeKind::Selective);
  CHECK(run.parallel.recompute_modules == (strategy::kRecomputeLayernorm | strategy::kRecomputeMlp));
  // An empty list reruns nothing (Megatron-Core's --recompute-modules with no name).
  s.recompute_modules = "";
  CHECK(resolve(s).parallel.selective_modules() == 0);
  // A strategy file may give Megatron-Core's list.
  const auto parsed =
      config::parse_strategy(nlohmann::json::parse(R"({"recompute_modules": ["moe_act", "layernorm"]})"), "test");
  CHECK(parsed.recompute_modules == "moe_act,layernorm");
  CHECK_THROWS_WITH(config::parse_strategy(nlohmann::json::parse(R"({"recompute_modules": [3]})"), "test"),
                    Catch::Contains("recompute_modules: 3 is not a module name"));

  const auto fails = [](config::StrategyInput x, const std::string& text) {
    INFO(text);
    CHECK_THROWS_WITH(resolve(x), Catch::Contains(text));
  };
  s = base();
  s.recompute_modules = "core_attn,attention";
  fails(s, "--recompute-modules = attention is not a recomputation module");
  s.recompute_modules = "gdn_norm_out";
  fails(s, "Megatron-Core module of layers ptsim does not model");
  s.recompute_modules = "mhc";
  fails(s, "needs hyper-connections");
  s.recompute_modules = "mla_up_proj";
  fails(s, "needs multi-latent attention");
  s.recompute_modules = "moe_act";
  s.recompute = "full";
  fails(s, "applies to selective recomputation, not to --recompute full");
  s = base();
  s.precision = "fp8";
  s.fp8_recipe = "delayed";
  s.recompute_modules = "layernorm";
  fails(s, "cannot be recomputed under delayed FP8 scaling");
}

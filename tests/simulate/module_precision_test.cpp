// Modules in a format of their own (Megatron-Core's quant_recipe matchers,
// module_precision) against closed forms: Nemotron 3 Nano (Mamba-2,
// attention and MoE layers) on 8 GB300s in NVFP4, and Nemotron 3 Super
// (latent MoE, two MTP depths) on 64.
#include <algorithm>

#include "test_support.hpp"

using namespace ptsim;

namespace {

config::StrategyInput nvfp4(std::int64_t gpus, const char* modules) {
  config::StrategyInput st;
  st.gpus = gpus;
  st.ep = gpus;
  st.global_batch_size = gpus;  // one micro-batch a rank
  st.seq_length = 4096;
  st.distributed_optimizer = true;
  st.precision = "nvfp4";
  if (modules != nullptr) st.module_precision = modules;
  return st;
}

std::uint64_t gemm_calls(const model::ModelSpec& m, const config::StrategyInput& st, Dtype dtype) {
  return test::gemm_calls(m, test::shipped_hardware("gb300-nvl72"), st, dtype);
}

std::uint64_t layers_of(const model::ModelSpec& m, char symbol) {
  std::uint64_t n = 0;
  for (std::int64_t l = 0; l < m.num_layers; ++l) n += m.layer_symbol(l) == symbol ? 1 : 0;
  return n;
}

report::StepResult run(const model::ModelSpec& m, const config::StrategyInput& st) {
  return test::simulate(m, test::shipped_hardware("gb300-nvl72"), st).result;
}

}  // namespace

TEST_CASE("Attention and Mamba output projections run in the formats given them", "[simulate][module_precision]") {
  const auto m = test::shipped_model("nemotron-3-nano-30b-a3b");
  const auto base = nvfp4(8, nullptr);
  const auto mixed = nvfp4(8, "attention=bf16,mamba_out_proj=mxfp8");
  // Each linear runs a forward, an input-gradient and a weight-gradient GEMM:
  // attention's QKV and output projections in each attention layer, the
  // output projection in each Mamba layer.
  const std::uint64_t attention = 3 * 2 * layers_of(m, '*');
  const std::uint64_t mamba = 3 * layers_of(m, 'M');
  CHECK(gemm_calls(m, base, Dtype::Mxfp8) == 0);
  CHECK(gemm_calls(m, mixed, Dtype::Mxfp8) == mamba);
  CHECK(gemm_calls(m, mixed, Dtype::Bf16) - gemm_calls(m, base, Dtype::Bf16) == attention);
  CHECK(gemm_calls(m, base, Dtype::Nvfp4) - gemm_calls(m, mixed, Dtype::Nvfp4) == attention + mamba);
  // Transformer Engine's weight cache: two quantized copies of each weight,
  // NVFP4's 1/2 + 1/16 bytes an element each, MXFP8's 1 + 1/32; none in bf16.
  const double h = 2688, q = 32 * 128, kv = 2 * 128;
  const double attention_weights = static_cast<double>(layers_of(m, '*')) * (h * (q + 2 * kv) + q * h);
  const double out_proj_weights = static_cast<double>(layers_of(m, 'M')) * 64 * 64 * h;
  const double fp4 = 2 * (0.5 + 1.0 / 16), fp8 = 2 * (1 + 1.0 / 32);
  const auto all_fp4 = run(m, base);
  const auto bf16_attention = run(m, nvfp4(8, "attention=bf16"));
  const auto mxfp8_out_proj = run(m, nvfp4(8, "mamba_out_proj=mxfp8"));
  CHECK(static_cast<double>(all_fp4.memory.params_bytes - bf16_attention.memory.params_bytes) ==
        Approx(fp4 * attention_weights).epsilon(1e-6));
  CHECK(static_cast<double>(mxfp8_out_proj.memory.params_bytes - all_fp4.memory.params_bytes) ==
        Approx((fp8 - fp4) * out_proj_weights).epsilon(1e-6));
  CHECK(bf16_attention.module_precision == std::vector<std::string>{"attention=bf16"});
}

TEST_CASE("Latent projections and MTP depths run in the formats given them", "[simulate][module_precision]") {
  const auto m = test::shipped_model("nemotron-3-super-120b-a12b");
  const auto base = nvfp4(64, nullptr);
  // Every MoE layer's two latent projections; the MTP depths' run in bf16
  // already (below).
  const auto moe_layers = static_cast<std::uint64_t>(layers_of(m, 'E'));
  const auto latent = nvfp4(64, "latent_proj=bf16");
  CHECK(gemm_calls(m, latent, Dtype::Bf16) - gemm_calls(m, base, Dtype::Bf16) == 3 * 2 * moe_layers);
  // Megatron-Core enters the MTP depths' quantization context only under
  // FP8 ("currently ignoring FP4 in MTP layers"): under NVFP4 they run in
  // bf16 unless a matcher gives them a format. With mtp=mxfp8 their GEMMs
  // move from bf16 to MXFP8, as many as leave bf16, and the main layers'
  // NVFP4 GEMMs stay; mtp=bf16 changes nothing.
  const auto mx = nvfp4(64, "mtp=mxfp8");
  const std::uint64_t moved = gemm_calls(m, mx, Dtype::Mxfp8) - gemm_calls(m, base, Dtype::Mxfp8);
  CHECK(moved > 0);
  CHECK(gemm_calls(m, base, Dtype::Bf16) - gemm_calls(m, mx, Dtype::Bf16) == moved);
  CHECK(gemm_calls(m, mx, Dtype::Nvfp4) == gemm_calls(m, base, Dtype::Nvfp4));
  CHECK(gemm_calls(m, nvfp4(64, "mtp=bf16"), Dtype::Bf16) == gemm_calls(m, base, Dtype::Bf16));
}

TEST_CASE("Module formats refuse what Megatron-Core's recipes do not run or ptsim does not model",
          "[config][module_precision]") {
  const auto nano = test::shipped_model("nemotron-3-nano-30b-a3b");
  config::StrategyInput st = nvfp4(8, "attention=bf16");
  st.precision.reset();
  CHECK_THROWS_WITH(config::resolve_run(nano, st), Catch::Contains("precision is bf16"));
  CHECK_THROWS_WITH(config::resolve_run(nano, nvfp4(8, "attention=fp8")), Catch::Contains("names no format"));
  config::StrategyInput fp8 = nvfp4(8, "mamba_out_proj=mxfp8");
  fp8.precision = "fp8";
  fp8.fp8_recipe = "mxfp8";
  CHECK_THROWS_WITH(config::resolve_run(nano, fp8), Catch::Contains("inside NVFP4 training only"));
  CHECK_THROWS_WITH(config::resolve_run(nano, nvfp4(8, "router=bf16")), Catch::Contains("is not MODULE=FORMAT"));
  CHECK_THROWS_WITH(config::resolve_run(nano, nvfp4(8, "attention=bf16,attention=bf16")),
                    Catch::Contains("sets a module twice"));
  CHECK_THROWS_WITH(config::resolve_run(nano, nvfp4(8, "latent_proj=bf16")), Catch::Contains("does not have"));
  CHECK_THROWS_WITH(config::resolve_run(test::shipped_model("deepseek-v3"), nvfp4(8, "attention=bf16")),
                    Catch::Contains("multi-latent attention"));
  config::StrategyInput gathered = nvfp4(8, "attention=bf16");
  gathered.fp4_param_gather = true;
  CHECK_THROWS_WITH(config::resolve_run(nano, gathered), Catch::Contains("quantized parameter gathering"));
}

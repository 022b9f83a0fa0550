// Megatron-LM's --te-precision-config-file read into module_precision,
// against the matchers of Megatron-Bridge's Nemotron 3 Super recipe read by
// hand, and the refusals of what ptsim's module formats cannot say.
#include "ptsim/config/te_precision_config.hpp"

#include <string>

#include "ptsim/common/error.hpp"
#include "ptsim/config/megatron_args.hpp"
#include "test_support.hpp"

using namespace ptsim;
using Catch::Matchers::Contains;

namespace {

const std::string kNemotronFile = "te_precision/nemotronh-te_quant.cfg";

config::TeQuantRun nvfp4() { return {Dtype::Nvfp4, "", 0, 0}; }
config::TeQuantRun mxfp8() { return {Dtype::Mxfp8, "mxfp8", 0, 0}; }

std::string formats_of(const std::string& yaml, const model::ModelSpec& m, const config::TeQuantRun& run) {
  return config::module_precision_of(config::load_te_precision_config(test::write_scratch("recipe.yaml", yaml)), m,
                                     run);
}

// A recipe of two configs and the given matchers.
std::string recipe(const std::string& matchers, const std::string& mxfp8_extra = "") {
  return "configs:\n"
         "  mxfp8:\n"
         "    transformer_engine_config_type: \"TEQuantizationParams\"\n"
         "    training_recipe:\n"
         "      fp8_quantization_recipe: \"mxfp8\"\n" +
         mxfp8_extra +
         "  bf16:\n"
         "    transformer_engine_config_type: \"TEQuantizationParams\"\n"
         "    training_recipe: {}\n"
         "matchers:\n" +
         matchers;
}

std::string matcher(const std::string& name, const std::string& config, const std::string& pattern,
                    bool enabled = true) {
  return "  " + name + ":\n    config: \"" + config + "\"\n    type: \"glob\"\n    pattern: \"" + pattern +
         "\"\n    enabled: " + (enabled ? "true" : "false") + "\n";
}

}  // namespace

TEST_CASE("Megatron-Bridge's Nemotron 3 Super recipe file reads as its module formats", "[config][formats]") {
  // The file's matchers in order: *.linear_qkv and *.linear_proj bf16,
  // *mlp.fc[12]_latent_proj bf16, mtp.* bf16, *mixer.out_proj mxfp8. Under
  // NVFP4 the MTP depths already run in bf16 (Megatron-Core enters no FP4
  // context for them, and a bf16 config does not override a module outside
  // a quantized context), so nothing is said of them.
  const auto super = test::shipped_model("nemotron-3-super-120b-a12b");
  const auto recipe = config::load_te_precision_config(test::data_path(kNemotronFile));
  CHECK(recipe.matchers.size() == 5);
  CHECK(config::module_precision_of(recipe, super, nvfp4()) == "attention=bf16,latent_proj=bf16,mamba_out_proj=mxfp8");
  // Under MXFP8 the Mamba output projection's config is the run's own, and
  // the MTP depths, quantized there, go to bf16.
  CHECK(config::module_precision_of(recipe, super, mxfp8()) == "attention=bf16,latent_proj=bf16,mtp=bf16");
}

TEST_CASE("A recipe file runs the step --module-precision runs", "[simulate][formats]") {
  const auto hw = test::shipped_hardware("gb300-nvl72");
  const auto super = test::shipped_model("nemotron-3-super-120b-a12b");
  config::StrategyInput s;
  s.gpus = 64;
  s.ep = 64;
  s.global_batch_size = 64;
  s.precision = "nvfp4";
  s.te_precision_config_file = test::data_path(kNemotronFile);
  const auto from_file = test::simulate(super, hw, s);
  s.te_precision_config_file.reset();
  s.module_precision = "attention=bf16,latent_proj=bf16,mtp=bf16,mamba_out_proj=mxfp8";
  const auto given = test::simulate(super, hw, s);
  s.module_precision.reset();
  const auto plain = test::simulate(super, hw, s);
  CHECK(from_file.result.step_time_s == Approx(given.result.step_time_s).epsilon(1e-12));
  CHECK(from_file.result.step_time_s > plain.result.step_time_s * 1.01);
  // Both at once is a conflict.
  s.module_precision = "attention=bf16";
  s.te_precision_config_file = test::data_path(kNemotronFile);
  CHECK_THROWS_WITH(test::simulate(super, hw, s), Contains("te-precision-config-file") && Contains("give one"));
}

TEST_CASE("A recipe file's matchers decide in order and only where their config overrides", "[config][formats]") {
  const auto super = test::shipped_model("nemotron-3-super-120b-a12b");
  // The first enabled matcher wins; a disabled one is skipped.
  CHECK(formats_of(recipe(matcher("off", "bf16", "*mixer.out_proj", false) +
                          matcher("outproj", "mxfp8", "*mixer.out_proj") + matcher("late", "bf16", "*mixer.out_proj")),
                   super, nvfp4()) == "mamba_out_proj=mxfp8");
  // Outside a quantized context (MTP under NVFP4) a config applies only with
  // override_nonquantized_autocast.
  CHECK(formats_of(recipe(matcher("mtp", "mxfp8", "mtp.*")), super, nvfp4()).empty());
  CHECK(formats_of(recipe(matcher("mtp", "mxfp8", "mtp.*"), "      override_nonquantized_autocast: true\n"), super,
                   nvfp4()) == "mtp=mxfp8");
  // The layers first_last_layers_bf16 keeps in bf16 stay so: a bf16 config
  // there agrees with them.
  CHECK(formats_of(recipe(matcher("attn", "bf16", "*.linear_qkv") + matcher("proj", "bf16", "*.linear_proj")), super,
                   {Dtype::Nvfp4, "", 1, 1}) == "attention=bf16");
}

TEST_CASE("A recipe file ptsim's module formats cannot say is refused by name", "[config][formats]") {
  const auto super = test::shipped_model("nemotron-3-super-120b-a12b");
  // The routed experts have no format of their own in ptsim.
  CHECK_THROWS_WITH(formats_of(recipe(matcher("fc1", "mxfp8", "*fc1*")), super, nvfp4()),
                    Contains("matcher fc1") && Contains("decoder.layers.") && Contains("experts.linear_fc1"));
  // Attention's QKV and output projections are one module in ptsim.
  CHECK_THROWS_WITH(formats_of(recipe(matcher("qkv", "bf16", "*.linear_qkv")), super, nvfp4()),
                    Contains("linear_qkv") && Contains("linear_proj") && Contains("one format"));
  // So are the layers of a module.
  CHECK_THROWS_WITH(formats_of(recipe(matcher("one", "mxfp8", "*layers.2.mixer.out_proj")), super, nvfp4()),
                    Contains("one format"));
  // MXFP8 inside MXFP8 training changes nothing; bf16 and MXFP8 under NVFP4
  // are the formats module_precision runs, not NVFP4 inside FP8 training.
  CHECK(formats_of(recipe(matcher("outproj", "mxfp8", "*mixer.out_proj")), super, mxfp8()).empty());
  const std::string nvfp4_config =
      "configs:\n  fp4:\n    transformer_engine_config_type: \"TEQuantizationParams\"\n"
      "    training_recipe:\n      fp4_quantization_recipe: \"nvfp4\"\nmatchers:\n" +
      matcher("outproj", "fp4", "*mixer.out_proj");
  CHECK_THROWS_WITH(formats_of(nvfp4_config, super, mxfp8()), Contains("nvfp4 format inside mxfp8 training"));
  // A bf16 layer turned quantized.
  CHECK_THROWS_WITH(formats_of(recipe(matcher("outproj", "mxfp8", "*mixer.out_proj"),
                                      "      override_nonquantized_autocast: true\n"),
                               super, {Dtype::Nvfp4, "", 1, 1}),
                    Contains("first_last_layers_bf16"));
}

TEST_CASE("A recipe file Megatron-Core would refuse is refused with its key", "[config][formats]") {
  const auto super = test::shipped_model("nemotron-3-super-120b-a12b");
  const auto bad = [&](const std::string& yaml) { return formats_of(yaml, super, nvfp4()); };
  CHECK_THROWS_WITH(bad(recipe("", "      fp8_param: true\n")), Contains("fp8_param is true"));
  CHECK_THROWS_WITH(bad(recipe("", "      amax_history: 16\n")),
                    Contains("configs.mxfp8.training_recipe.amax_history") && Contains("TEQuantizationRecipe"));
  CHECK_THROWS_WITH(bad("configs:\n  d:\n    transformer_engine_config_type: \"TEQuantizationParams\"\n"
                        "    training_recipe:\n      fp8_quantization_recipe: \"delayed\"\n"),
                    Contains("delayed"));
  CHECK_THROWS_WITH(bad(recipe("  r:\n    config: \"bf16\"\n    type: \"regex\"\n    pattern: \".*\"\n"
                               "    enabled: true\n")),
                    Contains("matchers.r.type") && Contains("glob"));
  CHECK_THROWS_WITH(bad(recipe(matcher("m", "fp16", "*"))), Contains("'fp16', which configs does not define"));
  CHECK_THROWS_WITH(bad("configs: [1, 2\n"), Contains("line"));
  CHECK_THROWS_AS(bad("configs:\n  [a, b]: {}\n"), ConfigError);  // a key that is a list
  CHECK_THROWS_WITH(config::load_te_precision_config(test::scratch_path("missing.yaml")), Contains("cannot be read"));
}

TEST_CASE("Megatron-LM's --te-precision-config-file is taken from a launch line", "[config][megatron]") {
  const config::MegatronLaunch launch =
      config::parse_megatron_args({"--num-layers", "4", "--hidden-size", "1024", "--num-attention-heads", "8",
                                   "--max-position-embeddings", "1024", "--seq-length", "1024", "--vocab-size", "1024",
                                   "--fp4-format", "e2m1", "--te-precision-config-file", "te_quant.cfg"});
  REQUIRE(launch.strategy.te_precision_config_file);
  CHECK(*launch.strategy.te_precision_config_file == "te_quant.cfg");
  for (const auto& flag : launch.not_modelled) CHECK(flag != "--te-precision-config-file");
}

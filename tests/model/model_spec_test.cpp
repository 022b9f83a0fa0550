// Parameter counts against the sizes their authors publish.
#include "ptsim/model/model_spec.hpp"

#include "test_support.hpp"

using namespace ptsim;

TEST_CASE("Parameter counts match published model sizes", "[model]") {
  // Published sizes: Llama 2 7B has 6.74e9 parameters and Llama 2 70B 68.98e9
  // (Touvron et al. 2023, HF model cards); Llama 3 8B 8.03e9, 70B 70.55e9 and
  // Llama 3.1 405B 405.85e9 (HF model cards, safetensors totals); GPT-2 small
  // 124.4e6 (HF model card: 124M); BERT-large 335e6 without the pooler and
  // type embeddings (Devlin et al. 2019: 340M with them).
  CHECK(model::total_parameters(test::shipped_model("llama2-7b")) == Approx(6.738e9).epsilon(0.002));
  CHECK(model::total_parameters(test::shipped_model("llama2-70b")) == Approx(68.977e9).epsilon(0.002));
  CHECK(model::total_parameters(test::shipped_model("llama3-8b")) == Approx(8.030e9).epsilon(0.002));
  CHECK(model::total_parameters(test::shipped_model("llama3-70b")) == Approx(70.554e9).epsilon(0.002));
  CHECK(model::total_parameters(test::shipped_model("llama3-405b")) == Approx(405.85e9).epsilon(0.002));
  CHECK(model::total_parameters(test::shipped_model("gpt2")) == Approx(124.44e6).epsilon(0.002));
  CHECK(model::total_parameters(test::shipped_model("bert-large")) == Approx(334.1e6).epsilon(0.01));
}

TEST_CASE("GPT-3 175B has 12·l·h² parameters to first order", "[model]") {
  // Per layer 12h² (attention 4h², MLP 8h²) plus 13h of biases and norms;
  // embeddings V·h + s·h. For h = 12288, l = 96: 174.6e9 (Brown et al. 2020: 175B).
  const auto m = test::shipped_model("gpt3-175b");
  const double h = 12288, l = 96, V = 51200, s = 2048;
  const double expected = l * (12 * h * h + 13 * h) + V * h + s * h + 2 * h;
  CHECK(static_cast<double>(model::total_parameters(m)) == Approx(expected).epsilon(1e-9));
  CHECK(expected == Approx(174.6e9).epsilon(0.001));
}

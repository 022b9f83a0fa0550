// Model files: both formats, and every way a model file is rejected.
#include "ptsim/config/load_model.hpp"

#include <nlohmann/json.hpp>

#include "ptsim/common/error.hpp"
#include "test_support.hpp"

using namespace ptsim;
using nlohmann::json;

namespace {
model::ModelSpec parse(const json& j) { return config::parse_model(j, "m.json", "fallback"); }

json tiny() {
  return json{{"num_layers", 2},     {"hidden_size", 64}, {"num_attention_heads", 4},
              {"vocab_size", 1000}, {"seq_length", 32}};
}
}  // namespace

TEST_CASE("Megatron-style model files take Megatron's defaults", "[config]") {
  const auto m = parse(tiny());
  CHECK(m.name == "fallback");
  CHECK(m.num_query_groups == 4);
  CHECK(m.ffn_hidden_size == 256);  // 4h
  CHECK(m.kv_channels == 16);       // h / a
  CHECK(m.activation == model::Activation::Gelu);
  CHECK(m.normalization == model::Normalization::LayerNorm);
  CHECK(m.tie_embeddings);
  CHECK(m.dropout == 0.1);
  const auto gpt3 = test::shipped_model("gpt3-175b");
  CHECK(gpt3.num_layers == 96);
  CHECK(gpt3.hidden_size == 12288);
}

TEST_CASE("Hugging Face configs are read as published", "[config]") {
  const auto llama = test::shipped_model("llama3-70b");
  CHECK(llama.num_layers == 80);
  CHECK(llama.hidden_size == 8192);
  CHECK(llama.num_query_groups == 8);
  CHECK(llama.ffn_hidden_size == 28672);
  CHECK(llama.vocab_size == 128256);
  CHECK(llama.activation == model::Activation::SwiGlu);
  CHECK(llama.normalization == model::Normalization::RmsNorm);
  CHECK(llama.position_embedding == model::PositionEmbedding::Rope);
  CHECK_FALSE(llama.tie_embeddings);
  CHECK(llama.dropout == 0.0);
  CHECK(llama.name == "llama3-70b");
  // Llama 3.1 405B: rope_scaling records the 8192-token pre-training length.
  CHECK(test::shipped_model("llama3-405b").seq_length == 8192);
  const auto gpt2 = test::shipped_model("gpt2");
  CHECK(gpt2.num_layers == 12);
  CHECK(gpt2.ffn_hidden_size == 3072);
  CHECK(gpt2.seq_length == 1024);
  const auto bert = test::shipped_model("bert-large");
  CHECK(bert.num_layers == 24);
  CHECK(bert.seq_length == 512);
  CHECK(bert.vocab_size == 30522);
}

TEST_CASE("Model files are rejected with the key, the value and the fix", "[config]") {
  json j = tiny();
  SECTION("unknown key") {
    j["hidden"] = 5;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("unknown key 'hidden'") &&
                                    Catch::Contains("accepted keys"));
  }
  SECTION("missing key") {
    j.erase("vocab_size");
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/vocab_size is missing"));
  }
  SECTION("wrong type") {
    j["num_layers"] = "24";
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/num_layers = \"24\" must be an integer"));
  }
  SECTION("non-positive size") {
    j["hidden_size"] = 0;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/hidden_size = 0 is out of range"));
  }
  SECTION("absurd size") {
    j["seq_length"] = std::int64_t{1} << 40;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/seq_length = 1099511627776 is out of range"));
  }
  SECTION("fractional size") {
    j["num_layers"] = 2.5;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("must be a whole number"));
  }
  SECTION("bad enum") {
    j["activation"] = "relu";
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/activation = \"relu\" is not one of the "
                                                "accepted values: gelu, swiglu"));
  }
  SECTION("heads not dividing hidden") {
    j["num_attention_heads"] = 3;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("must divide hidden_size = 64"));
  }
  SECTION("query groups not dividing heads") {
    j["num_query_groups"] = 3;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("num_query_groups = 3 must divide "
                                                "num_attention_heads = 4"));
  }
  SECTION("dropout out of range") {
    j["dropout"] = 1.5;
    CHECK_THROWS_WITH(parse(j), Catch::Contains("/dropout = 1.5 is out of range"));
  }
  SECTION("not an object") {
    CHECK_THROWS_WITH(parse(json::array()), Catch::Contains("must be a JSON object"));
  }
}

TEST_CASE("Hugging Face configs outside what ptsim models are rejected", "[config]") {
  json hf = {{"model_type", "llama"},        {"num_hidden_layers", 2},
             {"hidden_size", 64},            {"num_attention_heads", 4},
             {"intermediate_size", 128},     {"vocab_size", 100},
             {"max_position_embeddings", 32}, {"hidden_act", "silu"}};
  CHECK(parse(hf).num_layers == 2);
  SECTION("unknown family") {
    hf["model_type"] = "t5";
    CHECK_THROWS_WITH(parse(hf), Catch::Contains("/model_type = \"t5\" is not one of the "
                                                 "accepted values"));
  }
  SECTION("mixture of experts") {
    hf["num_local_experts"] = 8;
    CHECK_THROWS_WITH(parse(hf), Catch::Contains("mixture-of-experts models are not simulated yet"));
  }
  SECTION("missing dimension") {
    hf.erase("intermediate_size");
    CHECK_THROWS_WITH(parse(hf), Catch::Contains("/intermediate_size is missing"));
  }
}

TEST_CASE("Unreadable and malformed model files are rejected", "[config]") {
  CHECK_THROWS_WITH(config::load_model(test::data_path("does-not-exist.json")),
                    Catch::Contains("cannot open the file"));
  CHECK_THROWS_WITH(config::load_model(test::data_path("malformed.json")),
                    Catch::Contains("malformed.json: not valid JSON"));
}

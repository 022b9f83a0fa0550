// A Megatron-LM launch line read into ptsim's model and strategy, against
// Megatron's own defaults and checks (megatron/training/arguments.py at
// NVIDIA/Megatron-LM d98e8a6) worked out by hand.
#include "ptsim/config/megatron_args.hpp"

#include <sstream>

#include "ptsim/common/error.hpp"
#include "ptsim/model/model_spec.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

const std::string kGpt = "--num-layers 24 --hidden-size 4096 --num-attention-heads 32 --seq-length 2048 "
                         "--max-position-embeddings 2048 ";

config::MegatronLaunch read(const std::string& line) { return config::parse_megatron_args(words(line)); }

}  // namespace

TEST_CASE("A Megatron launch line takes Megatron's defaults where a flag is absent", "[config][megatron]") {
  const auto gpt = read(kGpt + "--tokenizer-type GPT2BPETokenizer --tensor-model-parallel-size 4");
  CHECK(gpt.model.ffn_hidden_size == 4 * 4096);  // 4h
  CHECK(gpt.model.kv_channels == 4096 / 32);
  CHECK(gpt.model.num_query_groups == 32);  // no --group-query-attention
  CHECK(gpt.model.normalization == model::Normalization::LayerNorm);
  CHECK(gpt.model.position_embedding == model::PositionEmbedding::LearnedAbsolute);
  CHECK(gpt.model.tie_embeddings);
  CHECK(gpt.model.add_bias_linear);
  CHECK(gpt.model.dropout == 0.1);
  // GPT-2's 50,257 tokens up to a multiple of 128 × TP 4 = 512: 50,688.
  CHECK(gpt.model.vocab_size == 50688);
  CHECK(gpt.strategy.tp == 4);
  // SwiGLU: 8h/3 rounded down to a multiple of 64: 10,922.67 → 10,880.
  const auto llama = read(kGpt + "--swiglu --normalization RMSNorm --position-embedding-type rope "
                                 "--group-query-attention --num-query-groups 8 --untie-embeddings-and-output-weights "
                                 "--disable-bias-linear --vocab-size 32000 --make-vocab-size-divisible-by 64 "
                                 "--attention-dropout 0.0 --hidden-dropout 0.0");
  CHECK(llama.model.ffn_hidden_size == 10880);
  CHECK(llama.model.activation == model::Activation::SwiGlu);
  CHECK(llama.model.normalization == model::Normalization::RmsNorm);
  CHECK(llama.model.num_query_groups == 8);
  CHECK_FALSE(llama.model.tie_embeddings);
  CHECK_FALSE(llama.model.add_bias_linear);
  CHECK(llama.model.vocab_size == 32000);  // already a multiple of 64 × TP 1
  CHECK(llama.model.dropout == 0.0);
}

TEST_CASE("A Megatron launch line's strategy flags, as ptsim reads the same settings", "[config][megatron]") {
  const auto l = read(kGpt + "--vocab-size 50000 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 "
                             "--num-layers-per-virtual-pipeline-stage 3 --sequence-parallel --micro-batch-size 2 "
                             "--global-batch-size 256 --use-distributed-optimizer --overlap-grad-reduce "
                             "--overlap-param-gather --bf16 --recompute-activations");
  CHECK(l.strategy.tp == 2);
  CHECK(l.strategy.pp == 4);
  CHECK(l.strategy.layers_per_virtual_stage == 3);
  CHECK(l.strategy.sequence_parallel == true);
  CHECK(l.strategy.micro_batch_size == 2);
  CHECK(l.strategy.global_batch_size == 256);
  CHECK(l.strategy.distributed_optimizer == true);
  CHECK(l.strategy.recompute == "selective");
  CHECK(l.strategy.batch_p2p_sync == true);  // Megatron-Core's default
  CHECK(l.strategy.overlap_p2p_comm == true);
  CHECK(read(kGpt + "--vocab-size 50000 --no-overlap-p2p-communication").strategy.overlap_p2p_comm == false);
  // Full recomputation: uniform with one layer a chunk is every layer; block is the first N.
  const auto uniform = read(kGpt + "--vocab-size 50000 --recompute-granularity full --recompute-method uniform "
                                   "--recompute-num-layers 1");
  CHECK(uniform.strategy.recompute == "full");
  CHECK_FALSE(uniform.strategy.recompute_num_layers);
  const auto block = read(kGpt + "--vocab-size 50000 --recompute-granularity full --recompute-method block "
                                 "--recompute-num-layers 3");
  CHECK(block.strategy.recompute_num_layers == 3);
  // Selective by module: Megatron-Core's list; --moe-layer-recompute adds moe.
  const auto modules = read(kGpt +
                            "--vocab-size 50000 --recompute-granularity selective --recompute-modules "
                            "layernorm moe_act");
  CHECK(modules.strategy.recompute == "selective");
  CHECK(modules.strategy.recompute_modules == "layernorm,moe_act");
  // Megatron-LM's parser (argument_utils.py: a list field takes nargs "+") wants a name or more.
  CHECK_THROWS_WITH(read(kGpt + "--vocab-size 50000 --recompute-granularity selective --recompute-modules"),
                    Catch::Contains("--recompute-modules needs one value or more"));
  const auto moe = read(kGpt + "--vocab-size 50000 --moe-layer-recompute");
  CHECK(moe.strategy.recompute == "selective");
  CHECK(moe.strategy.recompute_modules == "core_attn,moe");
  // FP8: e4m3 or hybrid, the recipes ptsim models.
  const auto fp8 = read(kGpt + "--vocab-size 50000 --fp8-format hybrid --fp8-recipe tensorwise --fp8-param-gather");
  CHECK(fp8.strategy.precision == "fp8");
  CHECK(fp8.strategy.fp8_recipe == "tensorwise");
  CHECK(fp8.strategy.fp8_param_gather == true);
  CHECK(read(kGpt + "--vocab-size 50000 --attention-backend fused").strategy.attention_backend == "cudnn");
  // Muon: the optimizer, its iterations and its TP mode reach the strategy.
  const auto muon =
      read(kGpt + "--vocab-size 50000 --optimizer dist_muon --muon-num-ns-steps 6 --muon-tp-mode blockwise");
  CHECK(muon.strategy.optimizer == "dist_muon");
  CHECK(muon.strategy.muon_num_ns_steps == 6);
  CHECK(muon.strategy.muon_tp_mode == "blockwise");
  // Benchmarks' forced balance is an even share on the busiest EP rank.
  CHECK(read(kGpt + "--vocab-size 50000 --moe-router-force-load-balancing").strategy.moe_load_imbalance == 1.0);
  CHECK_THROWS_WITH(read(kGpt + "--vocab-size 50000 --optimizer soap"),
                    Catch::Contains("--optimizer soap: ptsim simulates adam, muon, dist_muon"));
}

TEST_CASE("A Megatron launch line's model chunks and embedding/loss places reach the strategy", "[config][megatron]") {
  // Megatron-Bridge's Llama 3.1 405B GB200 recipes: 16 stages, 8 chunks a
  // stage, the embedding and the loss each counted as a layer.
  const auto l = read(kGpt +
                      "--vocab-size 50000 --pipeline-model-parallel-size 16 "
                      "--num-virtual-stages-per-pipeline-rank 8 --account-for-embedding-in-pipeline-split "
                      "--account-for-loss-in-pipeline-split");
  CHECK(l.strategy.vpp == 8);
  CHECK(l.strategy.account_for_embedding == true);
  CHECK(l.strategy.account_for_loss == true);
  CHECK(l.not_modelled.empty());
  // arguments.py: at most one of the three ways to give the chunks.
  CHECK_THROWS_WITH(read(kGpt + "--vocab-size 50000 --pipeline-model-parallel-size 4 "
                                "--num-virtual-stages-per-pipeline-rank 2 --num-layers-per-virtual-pipeline-stage 3"),
                    Catch::Contains("give at most one of --num-layers-per-virtual-pipeline-stage, "
                                    "--num-virtual-stages-per-pipeline-rank, --pipeline-model-parallel-layout"));
}

TEST_CASE("A Megatron launch line's other flags: listed as ignored, listed as not modelled, or refused",
          "[config][megatron]") {
  const auto l = read(kGpt + "--vocab-size 50000 --lr 3e-4 --lr-decay-style cosine --save /ckpt --save-interval 100 "
                             "--data-path 1.0 /data/a 0.5 /data/b --seed 7 --lr 1e-4 --manual-gc");
  CHECK(l.ignored == std::vector<std::string>{"--lr", "--lr-decay-style", "--save", "--save-interval", "--data-path",
                                              "--seed", "--manual-gc"});
  CHECK(l.not_modelled.empty());
  // A Megatron flag that changes a step and that ptsim does not model.
  CHECK(read(kGpt + "--vocab-size 50000 --moe-shared-expert-overlap").not_modelled ==
        std::vector<std::string>{"--moe-shared-expert-overlap"});
  // Megatron-Core's EP overlap is modelled: it reaches the strategy.
  const auto overlap = read(kGpt + "--vocab-size 50000 --overlap-moe-expert-parallel-comm --delay-wgrad-compute");
  CHECK(overlap.not_modelled.empty());
  CHECK(overlap.strategy.overlap_moe_expert_parallel_comm == std::optional<bool>(true));
  CHECK(overlap.strategy.delay_wgrad_compute == std::optional<bool>(true));
  // Megatron-Core's Torch-FSDP2: fully_shard per layer, resharded after the forward unless told not to.
  const auto fsdp = read(kGpt + "--vocab-size 50000 --use-torch-fsdp2 --no-gradient-accumulation-fusion");
  CHECK(fsdp.not_modelled.empty());
  CHECK(fsdp.strategy.fsdp == "fsdp2");
  CHECK(fsdp.strategy.reshard_after_forward == "always");
  CHECK(read(kGpt + "--vocab-size 50000 --use-torch-fsdp2 --torch-fsdp2-no-reshard-after-forward")
            .strategy.reshard_after_forward == "never");
  CHECK_THROWS_WITH(read(kGpt + "--vocab-size 50000 --num-layer 24"),
                    Catch::Contains("--num-layer is not a flag of Megatron-LM's pretrain_gpt.py") &&
                        Catch::Contains("did you mean --num-layers?"));
  CHECK_THROWS_WITH(read(kGpt + "--vocab-size"), Catch::Contains("--vocab-size needs a value"));
  CHECK_THROWS_WITH(read("--hidden-size 4096 --num-attention-heads 32 --seq-length 2048 --max-position-embeddings 2048 "
                         "--vocab-size 50000"),
                    Catch::Contains("--num-layers is missing"));
  CHECK_THROWS_WITH(read(kGpt + "--tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Llama-3.1-8B"),
                    Catch::Contains("give --vocab-size N"));
  CHECK_THROWS_WITH(read(kGpt + "--vocab-size 50000 --recompute-granularity full --recompute-method uniform "
                                "--recompute-num-layers 2"),
                    Catch::Contains("chunks of several layers are not modelled"));
  CHECK_THROWS_WITH(read(kGpt + "--vocab-size 50000 --fp8-format e4m3 --fp8-recipe custom"),
                    Catch::Contains("--fp8-recipe custom: ptsim simulates delayed, tensorwise, blockwise, mxfp8"));
  CHECK(read(kGpt + "--vocab-size 50000 --fp8-format e4m3 --fp8-recipe mxfp8 --reuse-grad-buf-for-mxfp8-param-ag")
            .strategy.fp8_recipe == "mxfp8");
  const auto fp4 = read(kGpt + "--vocab-size 50000 --fp4-format e2m1 --fp4-recipe nvfp4 --fp4-param-gather");
  CHECK(fp4.strategy.fp4_format == "e2m1");
  CHECK(fp4.strategy.fp4_recipe == "nvfp4");
  CHECK(fp4.strategy.fp4_param_gather == true);
  CHECK_THROWS_WITH(read(kGpt + "--vocab-size 50000 --fp8-format e4m3 --fp4-format e2m1"),
                    Catch::Contains("--fp4-format and --fp8-format both given"));
  // --squared-relu: one projection (FFN 4h, Megatron's default without a gate).
  const auto relu2 = read(kGpt + "--vocab-size 50000 --squared-relu");
  CHECK(relu2.model.activation == model::Activation::SquaredRelu);
  CHECK(relu2.model.ffn_hidden_size == 4 * relu2.model.hidden_size);
  CHECK_THROWS_WITH(read(kGpt + "--vocab-size 50000 --squared-relu --swiglu"),
                    Catch::Contains("--swiglu and --squared-relu name two activations"));
  CHECK_THROWS_WITH(read(kGpt + "--vocab-size 50000 --step-batch-size-schedule 0:16 2.4B:320"),
                    Catch::Contains("'2.4B:320' is not a flag") &&
                        Catch::Contains("follows --step-batch-size-schedule 0:16"));
  // The model's own checks apply: heads must divide the hidden size.
  CHECK_THROWS_AS(read("--num-layers 2 --hidden-size 100 --num-attention-heads 3 --seq-length 64 "
                       "--max-position-embeddings 64 --vocab-size 512"),
                  ConfigError);
}

TEST_CASE("A Megatron launch line's SM count of the flex dispatcher, its deprecated spellings too",
          "[config][megatron]") {
  const std::string flex = kGpt + "--vocab-size 50000 --moe-token-dispatcher-type flex ";
  const auto unified = read(flex + "--moe-flex-dispatcher-num-sms 24");
  CHECK(unified.not_modelled.empty());
  CHECK(unified.strategy.moe_flex_dispatcher_num_sms == std::optional<std::int64_t>(24));
  // Megatron-Core's __post_init__ routes moe_hybridep_num_sms and
  // moe_deepep_num_sms to moe_flex_dispatcher_num_sms when that is unset,
  // keeps an explicit one, and refuses two deprecated ones that differ.
  CHECK(read(flex + "--moe-hybridep-num-sms 32").strategy.moe_flex_dispatcher_num_sms ==
        std::optional<std::int64_t>(32));
  CHECK(read(flex + "--moe-deepep-num-sms 20 --moe-hybridep-num-sms 20").strategy.moe_flex_dispatcher_num_sms ==
        std::optional<std::int64_t>(20));
  CHECK(
      read(flex + "--moe-hybridep-num-sms 32 --moe-flex-dispatcher-num-sms 16").strategy.moe_flex_dispatcher_num_sms ==
      std::optional<std::int64_t>(16));
  CHECK_THROWS_WITH(read(flex + "--moe-deepep-num-sms 20 --moe-hybridep-num-sms 32"),
                    Catch::Contains("--moe-deepep-num-sms 20 and --moe-hybridep-num-sms 32 conflict"));
}

TEST_CASE("A Megatron launch line's --moe-layer-freq becomes the leading dense layers", "[config][megatron]") {
  const std::string moe =
      "--num-layers 61 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 "
      "--max-position-embeddings 1024 --vocab-size 32000 --num-experts 16 --moe-router-topk 2 ";
  // DeepSeek-V3's pattern: 3 dense layers, then 58 MoE layers.
  CHECK(read(moe + "--moe-layer-freq ([0]*3+[1]*58)").model.first_dense_layers == 3);
  CHECK(read(moe + "--moe-layer-freq [0,0]+[1]*59").model.first_dense_layers == 2);
  // Every layer MoE, by the integer or by a list.
  CHECK(read(moe + "--moe-layer-freq 1").model.first_dense_layers == 0);
  CHECK(read(moe + "--moe-layer-freq ([1]*61)").model.first_dense_layers == 0);
  // Megatron's own example, three MoE layers then a dense one, three times:
  // 12 entries, the first dense one the fourth layer (layer 3).
  const std::string twelve =
      "--num-layers 12 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 "
      "--max-position-embeddings 1024 --vocab-size 32000 --num-experts 16 ";
  CHECK_THROWS_WITH(read(twelve + "--moe-layer-freq ([1]*3+[0]*1)*3"),
                    Catch::Contains("layer 3 is dense after an MoE layer"));
  CHECK_THROWS_WITH(read(twelve + "--moe-layer-freq ([1]*3+[0]*1)*2"),
                    Catch::Contains("gives 8 layers where --num-layers is 12"));
  // An MoE layer every 2: dense layers between MoE ones, which ptsim does not simulate.
  CHECK_THROWS_WITH(read(moe + "--moe-layer-freq 2"), Catch::Contains("layer 1 is dense after an MoE layer"));
  CHECK_THROWS_WITH(read(moe + "--moe-layer-freq 0"), Catch::Contains("expected a positive integer"));
  CHECK_THROWS_WITH(read(moe + "--moe-layer-freq ([0]*3+[1]*57)"),
                    Catch::Contains("gives 60 layers where --num-layers is 61"));
  CHECK_THROWS_WITH(read(moe + "--moe-layer-freq ([0]*3+[2]*58)"),
                    Catch::Contains("2 is neither 0 (a dense layer) nor 1 (an MoE layer)"));
  CHECK_THROWS_WITH(read(moe + "--moe-layer-freq ([0]*3+[1]*58"), Catch::Contains("a '(' is not closed"));
  CHECK_THROWS_WITH(read(moe + "--moe-layer-freq ([0]*61)"), Catch::Contains("no layer holds an MoE MLP"));
  // A refusal, not a deep recursion, for parentheses nested without end.
  CHECK_THROWS_WITH(read(moe + "--moe-layer-freq " + std::string(100000, '(')),
                    Catch::Contains("parentheses nest deeper than 64"));
}

TEST_CASE("A Megatron launch line's CUDA graph flags, old spellings included", "[config][megatron]") {
  const std::string base = kGpt + "--vocab-size 50000 ";
  const auto modules = read(base + "--cuda-graph-impl transformer_engine --cuda-graph-modules attn moe_router");
  CHECK(modules.strategy.cuda_graph_impl == "transformer_engine");
  CHECK(modules.strategy.cuda_graph_modules == "attn,moe_router");
  // The hidden --cuda-graph-scope: "full_iteration" still means the implementation,
  // "full" whole layers (cuda_graph_config.py at d98e8a64dd).
  CHECK(read(base + "--cuda-graph-scope full_iteration").strategy.cuda_graph_impl == "full_iteration");
  CHECK(read(base + "--cuda-graph-impl local --cuda-graph-scope full_iteration").strategy.cuda_graph_impl ==
        "full_iteration");
  const auto whole = read(base + "--cuda-graph-impl local --cuda-graph-scope full");
  CHECK(whole.strategy.cuda_graph_impl == "local");
  CHECK_FALSE(whole.strategy.cuda_graph_modules);
  CHECK(read(base + "--enable-cuda-graph").strategy.cuda_graph_impl == "local");
  CHECK(read(base + "--external-cuda-graph").strategy.cuda_graph_impl == "transformer_engine");
  CHECK_FALSE(read(base).strategy.cuda_graph_impl);
  CHECK_THROWS_WITH(read(base + "--enable-cuda-graph --cuda-graph-impl local"),
                    Catch::Contains("cannot be combined with --cuda-graph-impl"));
  CHECK_THROWS_WITH(read(base + "--cuda-graph-scope attn --cuda-graph-modules attn"),
                    Catch::Contains("cannot be used together"));
  CHECK_THROWS_WITH(read(base + "--cuda-graph-impl transformer_engine --cuda-graph-scope full_iteration"),
                    Catch::Contains("cannot be combined with --cuda-graph-impl transformer_engine"));
  CHECK_THROWS_WITH(read(base + "--cuda-graph-impl replay"), Catch::Contains("--cuda-graph-impl replay"));
}

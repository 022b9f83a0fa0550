// Context parallelism under torchtitan's modules is PyTorch's context_parallel
// (workload/layer_torch_cp.cpp): its transfers, attention work and merges
// against hand counts of _templated_ring_attention and its backward.
#include <string>
#include <utility>
#include <vector>

#include "ptsim/config/resolve_run.hpp"
#include "ptsim/workload/layer_ops.hpp"
#include "test_support.hpp"
#include "workload/op_totals.hpp"

using namespace ptsim;

namespace {

// Llama 3 8B: 32 query heads of 128, 8 key/value groups that torchtitan
// expands to 32 before attention; one sequence of 16,384 tokens.
constexpr double kHeads = 32, kD = 128, kSeq = 16384;

workload::MicroShape torch_shape(std::int64_t cp, strategy::KernelFusion fusion,
                                 strategy::CpRotateMethod rotate = strategy::CpRotateMethod::AllGather) {
  workload::MicroShape s;
  s.seq_length = static_cast<std::int64_t>(kSeq);
  s.cp = cp;
  s.attention = strategy::AttentionBackend::Flash2;
  s.kernel_fusion = fusion;
  s.cp_rotate_method = rotate;
  return s;
}

// One rank's keys and values, expanded to every head, bf16.
double kv_bytes(std::int64_t cp) { return 2 * 2 * kHeads * (kSeq / static_cast<double>(cp)) * kD; }

// A two-layer Llama 3 8B over one sequence of 16k tokens on `cp` GPUs, all
// of them one CP group, torchtitan's compiled modules.
std::pair<model::ModelSpec, config::StrategyInput> two_layer_run(std::int64_t cp) {
  auto m = test::shipped_model("llama3-8b");
  m.num_layers = 2;
  config::StrategyInput st;
  st.gpus = cp;
  st.cp = cp;
  st.global_batch_size = 1;
  st.micro_batch_size = 1;
  st.seq_length = static_cast<std::int64_t>(kSeq);
  st.kernel_fusion = "compiled";
  return {m, st};
}

std::vector<const workload::OpSpec*> select(const std::vector<workload::OpSpec>& ops, workload::OpKind kind) {
  std::vector<const workload::OpSpec*> out;
  for (const auto& op : ops)
    if (op.kind == kind && (kind != workload::OpKind::Attention || op.name.rfind("attn.cp", 0) == 0))
      out.push_back(&op);
  return out;
}

}  // namespace

TEST_CASE(
    "PyTorch's context parallelism gathers the expanded keys and values once a pass and passes fp32 "
    "gradients round the ring",
    "[workload][cp]") {
  const auto m = test::shipped_model("llama3-8b");
  for (const std::int64_t cp : {2, 4, 8}) {
    const auto ops = workload::transformer_layer_ops(m, torch_shape(cp, strategy::KernelFusion::Compiled), 0);
    // Forward: one all-gather over the CP group, every rank's keys and values.
    const auto gathers = select(ops.forward, workload::OpKind::Collective);
    REQUIRE(gathers.size() == 1);
    CHECK(gathers[0]->group == workload::CommGroup::ContextParallel);
    CHECK(gathers[0]->collective == taskgraph::CollectiveKind::AllGather);
    CHECK(static_cast<double>(gathers[0]->bytes) == Approx(static_cast<double>(cp) * kv_bytes(cp)));
    CHECK(select(ops.forward, workload::OpKind::Send).empty());
    // Backward: the same gather again, and cp transfers of the key and
    // value gradients in fp32 (twice the bf16 bytes), one after every step.
    const auto back_gathers = select(ops.backward, workload::OpKind::Collective);
    REQUIRE(back_gathers.size() == 1);
    CHECK(back_gathers[0]->bytes == gathers[0]->bytes);
    const auto sends = select(ops.backward, workload::OpKind::Send);
    CHECK(static_cast<std::int64_t>(sends.size()) == cp);
    for (const auto* send : sends) CHECK(static_cast<double>(send->bytes) == Approx(2 * kv_bytes(cp)));
    CHECK(select(ops.backward, workload::OpKind::Recv).size() == sends.size());
  }
}

TEST_CASE("PyTorch's load balancing gives each CP rank 1/cp of causal attention, in cp kernels a pass",
          "[workload][cp]") {
  const auto m = test::shipped_model("llama3-8b");
  // The whole sequence's causal attention executes 2·h·s²·2d / 2 FLOP forward.
  const double causal_forward = 2 * kHeads * kSeq * kSeq * 2 * kD / 2;
  for (const std::int64_t cp : {2, 4, 8}) {
    const auto ops = workload::transformer_layer_ops(m, torch_shape(cp, strategy::KernelFusion::Eager), 0);
    const auto forward = select(ops.forward, workload::OpKind::Attention);
    const auto backward = select(ops.backward, workload::OpKind::Attention);
    REQUIRE(static_cast<std::int64_t>(forward.size()) == cp);
    REQUIRE(static_cast<std::int64_t>(backward.size()) == cp);
    double executed = 0;  // FLOP with the causal mask's skipped half taken out
    for (const auto* op : forward) executed += op->flops * ((op->flags & taskgraph::kCausal) ? 0.5 : 1.0);
    CHECK(executed == Approx(causal_forward / static_cast<double>(cp)));
    // Step 0 is the local chunks' causal block; the others half a block each, unmasked.
    CHECK((forward[0]->flags & taskgraph::kCausal) != 0);
    for (std::size_t i = 1; i < forward.size(); ++i) CHECK((forward[i]->flags & taskgraph::kCausal) == 0);
    double backward_flops = 0;
    for (const auto* op : backward) backward_flops += op->flops * ((op->flags & taskgraph::kCausal) ? 0.5 : 1.0);
    CHECK(backward_flops == Approx(2 * causal_forward / static_cast<double>(cp)));
  }
}

TEST_CASE("PyTorch's context parallelism merges partial outputs in fp32: _SDPAMerger's bytes eager and compiled",
          "[workload][cp]") {
  const auto m = test::shipped_model("llama3-8b");
  const std::int64_t cp = 4;
  const double out = kHeads * (kSeq / cp) * kD;  // output elements on a rank
  const auto merges = [&](strategy::KernelFusion fusion) {
    const auto ops = workload::transformer_layer_ops(m, torch_shape(cp, fusion), 0);
    return test::memory_op_totals(ops.forward, [](const std::string& name) {
      return name.rfind("attn.cp.merge", 0) == 0 || name == "attn.cp.out_fp32" || name == "attn.cp.out_cast";
    });
  };
  // Eager: step 0's output to fp32 (read 2, write 4); each later step's to
  // fp32 (2, 4), out − out_b (8, 4), sigmoid · that (4, 4), out − it (8, 4);
  // the result back to bf16 (4, 2).
  const auto eager = merges(strategy::KernelFusion::Eager);
  CHECK(eager.kernels == 1 + (cp - 1) + 1);
  CHECK(eager.bytes == Approx((6 + 38.0 * (cp - 1) + 6) * out));
  // Compiled: one kernel a merge reading the running and the partial
  // output and writing the running one: bf16 in before the first merge,
  // fp32 between, bf16 out after the last.
  const auto compiled = merges(strategy::KernelFusion::Compiled);
  CHECK(compiled.kernels == cp - 1);
  CHECK(compiled.bytes == Approx(((2 + 2 + 4) + (4 + 2 + 4) + (4 + 2 + 2)) * out));
}

TEST_CASE("PyTorch's alltoall rotation sends each shard on before every step but the last", "[workload][cp]") {
  const auto m = test::shipped_model("llama3-8b");
  const std::int64_t cp = 4;
  const auto ops = workload::transformer_layer_ops(m,
                                                   torch_shape(cp, strategy::KernelFusion::Compiled,
                                                               strategy::CpRotateMethod::AllToAll),
                                                   0);
  CHECK(select(ops.forward, workload::OpKind::Collective).empty());
  const auto forward = select(ops.forward, workload::OpKind::Send);
  REQUIRE(static_cast<std::int64_t>(forward.size()) == cp - 1);
  for (const auto* send : forward) CHECK(static_cast<double>(send->bytes) == Approx(kv_bytes(cp)));
  // Backward: the keys and values again (bf16) and their gradients (fp32) after every step.
  double bf16 = 0, fp32 = 0;
  for (const auto* send : select(ops.backward, workload::OpKind::Send))
    (send->name.find(".dkv") != std::string::npos ? fp32 : bf16) += static_cast<double>(send->bytes);
  CHECK(bf16 == Approx(static_cast<double>(cp - 1) * kv_bytes(cp)));
  CHECK(fp32 == Approx(static_cast<double>(cp) * 2 * kv_bytes(cp)));
}

TEST_CASE("Under PyTorch's context parallelism a layer keeps 1/cp of what it keeps without it", "[workload][cp]") {
  // Every tensor a layer saves is per token, and each rank holds s/cp tokens.
  const auto m = test::shipped_model("llama3-8b");
  for (const auto fusion : {strategy::KernelFusion::Eager, strategy::KernelFusion::Compiled}) {
    const auto saved = [&](std::int64_t cp) {
      const auto ops = workload::transformer_layer_ops(m, torch_shape(cp, fusion), 0);
      double kept = 0, freed = 0;
      for (const auto& op : ops.forward) kept += static_cast<double>(op.saved_bytes);
      for (const auto& op : ops.backward) freed += static_cast<double>(op.freed_bytes);
      CHECK(freed == Approx(kept));
      return kept;
    };
    CHECK(saved(4) * 4 == Approx(saved(1)));
  }
}

TEST_CASE("A CP step's traffic on a rank: three gathers a layer under full recomputation, cp gradient transfers",
          "[simulate][cp]") {
  // CP 4 under FSDP2, full recomputation (the forward's gather runs again
  // before the backward, which gathers once more).
  auto [m, st] = two_layer_run(4);
  st.attention_backend = "flash2";
  st.fsdp = "fsdp2";
  st.recompute = "full";
  const auto r = test::simulate(m, test::shipped_hardware("h100-sxm5-80gb"), st).result;
  const double gather = 4 * kv_bytes(4), gradients = 2 * kv_bytes(4);
  // Payloads as sent and as received: a rank receives each gradient transfer it sends on.
  CHECK(static_cast<double>(r.communication.at("cp").bytes) == Approx(2 * (3 * gather + 4 * 2 * gradients)));
}

TEST_CASE("The context-parallel rotate method is PyTorch's: refused without CP or with Megatron-Core's ring",
          "[config][cp]") {
  auto [m, st] = two_layer_run(2);
  st.cp_rotate_method = "alltoall";
  CHECK(config::resolve_run(m, st).parallel.cp_rotate_method == strategy::CpRotateMethod::AllToAll);
  st.kernel_fusion = "fused";
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("Megatron-Core's ring"));
  st.kernel_fusion = "compiled";
  st.cp = 1;
  CHECK_THROWS_WITH(config::resolve_run(m, st), Catch::Contains("needs context parallelism"));
  st.cp = 2;
  st.cp_rotate_method.reset();
  CHECK(config::resolve_run(m, st).parallel.cp_rotate_method == strategy::CpRotateMethod::AllGather);
}

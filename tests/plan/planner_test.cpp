// The strategy planner against brute force, across shards and thread counts,
// and against Megatron-LM's published choice for GPT-3 175B.
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "ptsim/common/error.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "plan/internal/bounds.hpp"
#include "ptsim/cost/cost_model.hpp"
#include "ptsim/plan/planner.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

plan::PlanRequest small_request(std::size_t top) {
  const nlohmann::json j = {{"num_layers", 8}, {"hidden_size", 2048}, {"num_attention_heads", 16},
                            {"vocab_size", 32000}, {"seq_length", 1024}};
  plan::PlanRequest r;
  r.model = config::parse_model(j, "small", "small");
  r.hardware = test::shipped_hardware("a100-sxm4-80gb");
  r.hardware.gpu.memory_bytes = 8.0 * (1ull << 30);  // a small GPU, so that memory decides
  r.gpus = 8;
  r.global_batch_size = 16;
  r.top = top;
  return r;
}

// A search of a shipped model and hardware that keeps, and so simulates,
// every candidate that fits.
plan::PlanRequest every_candidate(const std::string& model, const std::string& hardware, std::int64_t gpus,
                                  std::int64_t global_batch_size) {
  plan::PlanRequest r;
  r.model = test::shipped_model(model);
  r.hardware = test::shipped_hardware(hardware);
  r.gpus = gpus;
  r.global_batch_size = global_batch_size;
  r.top = 1000;
  return r;
}

std::vector<std::string> labels(const plan::PlanResult& r) {
  std::vector<std::string> out;
  for (const auto& c : r.best) out.push_back(c.label);
  return out;
}

}  // namespace

TEST_CASE("The planner's ranking equals brute-force simulation of every strategy", "[plan]") {
  const auto request = small_request(1000);
  const auto result = plan::plan(request);
  // Brute force: every enumerated strategy simulated, those that fit ranked.
  std::vector<std::pair<double, std::string>> all;
  std::size_t fit = 0;
  for (const auto& s : plan::enumerate(request)) {
    config::ResolvedRun run;
    try {
      run = config::resolve_run(request.model, s);
    } catch (const ConfigError&) {
      continue;
    }
    const auto out = simulate::simulate_step({run.model, request.hardware, run.parallel, simulate::Mode::Auto, {}, {}});
    if (!out.result.memory.fits) continue;
    ++fit;
    all.emplace_back(out.result.step_time_s, plan::describe(s));
  }
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  REQUIRE(fit > 10);
  REQUIRE(result.best.size() == fit);  // top large enough to hold every fitting one
  for (std::size_t i = 0; i < fit; ++i) {
    INFO(i);
    CHECK(result.best[i].result.step_time_s == Approx(all[i].first).epsilon(1e-12));
  }
  CHECK(result.best.front().label == all.front().second);
  // The bounds pruned something and nothing proposed exceeds the memory.
  CHECK(result.pruned_memory > 0);
  for (const auto& c : result.best) CHECK(c.result.memory.fits);
  // Every ranked strategy leaves the default headroom (a 0.4 GB CUDA context,
  // three 0.688 GB NCCL communicators) free of the 8 GiB.
  for (const auto& c : result.best)
    CHECK(static_cast<double>(c.result.memory.peak_bytes) + 0.4e9 + 3 * 0.688e9 <= 8.0 * (1ull << 30));
}

TEST_CASE("Pruning by bound keeps the exhaustive top K", "[plan]") {
  auto request = small_request(3);
  const auto pruned = plan::plan(request);
  request.top = 1000;
  const auto exhaustive = plan::plan(request);
  REQUIRE(pruned.best.size() == 3);
  CHECK(pruned.pruned_bound > 0);
  for (std::size_t i = 0; i < 3; ++i) CHECK(pruned.best[i].label == exhaustive.best[i].label);
}

TEST_CASE("Under PyTorch's context parallelism the lower bounds never exceed a simulated step", "[plan][cp]") {
  // Two layers of Llama 3 8B at 16k tokens on 8 GPUs, torchtitan's compiled
  // modules: the search takes CP 1 to 8 and both rotate methods' rings,
  // whose merges and transfers the bounds must not overcount.
  for (const char* rotate : {"allgather", "alltoall"}) {
    auto request = every_candidate("llama3-8b", "h100-sxm5-80gb", 8, 8);
    request.model.num_layers = 2;
    request.seq_length = 16384;
    request.fixed.kernel_fusion = "compiled";
    request.fixed.attention_backend = "flash2";
    if (std::string(rotate) == "alltoall") request.fixed.cp_rotate_method = rotate;
    const auto result = plan::plan(request);
    std::set<std::int64_t> cps;
    for (const auto& c : result.best) {
      INFO(rotate << " " << c.label);
      cps.insert(c.parallel.cp);
      CHECK(c.lower_bound_s <= c.result.step_time_s);
    }
    CHECK(cps.count(4) == 1);  // context-parallel candidates were simulated
  }
}

TEST_CASE("The lower bounds, the host's included, never exceed a simulated step", "[plan][host]") {
  // The tiny model's kernels are far shorter than the default 65 µs a host
  // spends issuing each: most of these steps are host-bound, and only a
  // bound that counts the host's issues comes near them.
  const auto result = plan::plan(every_candidate("tiny", "a100-sxm4-80gb", 8, 64));
  REQUIRE(result.best.size() > 10);
  std::size_t host_bound = 0;
  for (const auto& c : result.best) {
    INFO(c.label);
    CHECK(c.lower_bound_s <= c.result.step_time_s);
    if (c.result.breakdown.host_issue_s > 0.5 * c.result.step_time_s) ++host_bound;
    // Within a factor of two of the step: the host term is the bound here.
    if (c.result.breakdown.host_issue_s > 0.5 * c.result.step_time_s) CHECK(c.lower_bound_s > 0.5 * c.result.step_time_s);
  }
  CHECK(host_bound > 0);
}

TEST_CASE("Under CUDA graphs the host's bound counts what the graphs leave it and stays below every step",
          "[plan][host][cuda-graphs]") {
  // Per-layer graphs of the attention alone (the host issues the MLP's
  // kernels and a replay a layer and pass) and a graph of the whole step.
  for (const auto& [impl, modules] :
       std::vector<std::pair<std::string, std::string>>{{"transformer_engine", "attn"}, {"full_iteration", ""}}) {
    INFO(impl << " " << modules);
    auto r = every_candidate("tiny", "a100-sxm4-80gb", 8, 64);
    r.fixed.cuda_graph_impl = impl;
    if (!modules.empty()) r.fixed.cuda_graph_modules = modules;
    const auto result = plan::plan(r);
    REQUIRE(result.best.size() > 10);
    for (const auto& c : result.best) {
      INFO(c.label);
      CHECK(c.lower_bound_s <= c.result.step_time_s);
    }
  }
}

TEST_CASE("The pipeline bounds, interleaved chunks included, never exceed a simulated step", "[plan]") {
  // No host time: the kernels, the TP collectives the compute stream waits
  // for and the pipeline's fill and drain are the bound. Every candidate
  // simulated (top 1000 of a small search) is checked, on an A100 node
  // (NVLink 3, ring collectives) and an H100 one (NVLink SHARP all-reduces).
  const std::string profile = GENERATE("a100-sxm4-80gb", "h100-sxm5-80gb");
  INFO(profile);
  auto r = small_request(1000);
  r.hardware = test::shipped_hardware(profile);
  r.global_batch_size = 32;
  r.fixed.host_overhead_us = 0;
  const auto result = plan::plan(r);
  std::size_t interleaved = 0, piped = 0;
  for (const auto& c : result.best) {
    INFO(c.label);
    CHECK(c.lower_bound_s <= c.result.step_time_s);
    if (c.label.find("interleaved") != std::string::npos) ++interleaved;
    if (c.label.find("pp=1 ") == std::string::npos) ++piped;
  }
  CHECK(interleaved > 0);
  CHECK(piped > interleaved);
}

TEST_CASE("A CP ring holds its earliest rank for its slowest hop's pace, then the hops after it", "[plan]") {
  // Ring attention forwards each block as it arrives, and each rank takes
  // its blocks one after another, so a rank's last step waits for cp − 1
  // transfers in a row, each the time of some hop on the way and at least
  // its time alone (its plan's time, less 1 ns of rounding): the slow hop
  // into a rank paces every rank after it. On DGX H100 nodes of 8 GPUs the
  // CP ranks sit tp apart.
  const auto hw = test::shipped_hardware("dgx-h100-superpod");
  const std::uint64_t bytes = 1 << 20;
  const auto hop = [&](std::int64_t gpus, Rank from, Rank to) {
    const hardware::Cluster cluster(hw, gpus);
    const cost::CostModel cost(cluster);
    taskgraph::Task t;
    t.kind = taskgraph::TaskKind::Send;
    t.collective = taskgraph::CollectiveKind::PointToPoint;
    t.bytes = bytes;
    return cost.communication_plan(t, taskgraph::Communicator{{from, to}, std::nullopt}).estimated_s - 1e-9;
  };
  const auto config = [](std::int64_t tp, std::int64_t cp) {
    strategy::ParallelConfig c;
    c.tp = tp;
    c.cp = cp;
    c.dp = 1;
    c.pp = 1;
    return c;
  };
  // TP 8, CP 4 over 4 nodes: every hop crosses the network; three in a row.
  const double network = hop(32, 0, 8);
  const double nvlink = hop(32, 0, 2);
  REQUIRE(network > 2 * nvlink);
  plan::internal::Bounds across(hw, 32);
  const std::vector<double> instant(4, 0.0);
  CHECK(across.ring_hold_seconds(config(8, 4), bytes, instant) == Approx(3 * network).epsilon(1e-12));
  // Steps of half a hop: each waits for its block, the last ends half a hop
  // after the third transfer; steps of two hops never wait.
  const double half = network / 2;
  CHECK(across.ring_hold_seconds(config(8, 4), bytes, {1e-6, half, half, half}) ==
        Approx(3 * network + half).epsilon(1e-12));
  CHECK(across.ring_hold_seconds(config(8, 4), bytes, std::vector<double>(4, 2 * network)) ==
        Approx(8 * network).epsilon(1e-12));
  // TP 2, CP 8 over 2 nodes: ranks 0, 2, 4, 6 on one node and 8 … 14 on the
  // other, the hops into 0 and into 8 across the network. Rank 6 (and 14)
  // is the rank farthest after a slow hop: its last block waits four network
  // hops at rank 0's pace, then three NVLink hops.
  plan::internal::Bounds two_nodes(hw, 16);
  CHECK(two_nodes.ring_hold_seconds(config(2, 8), bytes, std::vector<double>(8, 0.0)) ==
        Approx(4 * hop(16, 6, 8) + 3 * hop(16, 0, 2)).epsilon(1e-12));
  // TP 1, CP 8 in one node: seven NVLink hops.
  plan::internal::Bounds one_node(hw, 8);
  CHECK(one_node.ring_hold_seconds(config(1, 8), bytes, std::vector<double>(8, 0.0)) ==
        Approx(7 * hop(8, 0, 1)).epsilon(1e-12));
}

TEST_CASE("Context-parallel bounds, their rings' transfers and calls included, never exceed a simulated step",
          "[plan]") {
  // Llama 3 8B over two DGX H100 nodes at 16k tokens: CP 2 to 8 with TP 1
  // to 8, so rings run inside a node, across both, and half and half; their
  // steps are short beside a transfer's latency, which is where the wait
  // for the blocks counts. With and without host time (the host issues each
  // send and receive as it issues kernels).
  const double host_us = GENERATE(0.0, 65.0);
  INFO("host " << host_us << " us");
  plan::PlanRequest r = every_candidate("llama3-8b", "dgx-h100-superpod", 16, 8);
  r.seq_length = 16384;
  r.fixed.pp = 2;
  r.fixed.host_overhead_us = host_us;
  const auto result = plan::plan(r);
  std::size_t rings = 0;
  for (const auto& c : result.best) {
    INFO(c.label);
    CHECK(c.lower_bound_s <= c.result.step_time_s);
    if (c.parallel.cp > 1) ++rings;
  }
  CHECK(rings > 100);
}

TEST_CASE("Data-parallel bounds count what stage 0 reduces and gathers after its last kernel, below every step",
          "[plan]") {
  // Llama 3 8B over two DGX H100 nodes with a small batch: its gradients
  // (fp32, 32 GB a replica) cross the network, and without Megatron-LM's
  // overlaps every bucket is reduced after the last backward and, under
  // ZeRO-1, every parameter gathered after the optimizer. With the overlaps
  // on, the embedding's bucket is still reduced after it.
  const bool overlap = GENERATE(false, true);
  INFO((overlap ? "overlapped" : "not overlapped"));
  plan::PlanRequest r = every_candidate("llama3-8b", "dgx-h100-superpod", 16, 16);
  r.seq_length = 2048;
  r.fixed.overlap_grad_reduce = overlap;
  r.fixed.overlap_param_gather = overlap;
  const auto result = plan::plan(r);
  REQUIRE(result.best.size() > 50);
  std::size_t dp_bound = 0;
  for (const auto& c : result.best) {
    INFO(c.label);
    CHECK(c.lower_bound_s <= c.result.step_time_s);
    // Where the reduction is near half of the step, only a bound that
    // counts it comes near: the kernels alone are some 60 % of the step.
    const auto found = c.result.communication.find("dp");
    const double dp = found == c.result.communication.end() ? 0.0 : found->second.exposed_s;
    if (!overlap && c.parallel.pp == 1 && dp > 0.4 * c.result.step_time_s) {
      ++dp_bound;
      CHECK(c.lower_bound_s > 0.85 * c.result.step_time_s);
    }
  }
  if (!overlap) CHECK(dp_bound > 0);
}

TEST_CASE("Sharded searches merge into the unsharded ranking, at any thread count", "[plan]") {
  auto request = small_request(5);
  request.threads = 1;
  const auto whole = plan::plan(request);
  std::vector<plan::PlanResult> parts;
  std::size_t searched = 0;
  for (std::int64_t i = 0; i < 3; ++i) {
    auto part = request;
    part.shard = {i, 3};
    parts.push_back(plan::plan(part));
    searched += parts.back().searched;
  }
  CHECK(searched == whole.searched);
  CHECK(labels(plan::merge(parts, 5)) == labels(whole));
  for (const unsigned threads : {2u, 4u}) {
    request.threads = threads;
    CHECK(labels(plan::plan(request)) == labels(whole));
  }
}

TEST_CASE("For GPT-3 175B on 1024 A100s the plan beats Megatron-LM's published choice", "[plan][slow]") {
  // Narayanan et al. 2021 trained it with TP 8, PP 8 and the interleaved schedule.
  plan::PlanRequest request;
  request.model = test::shipped_model("gpt3-175b");
  request.hardware = test::shipped_hardware("dgx-a100-superpod");
  request.gpus = 1024;
  request.global_batch_size = 1536;
  request.top = 1;
  const auto best = plan::plan(request);
  REQUIRE(best.best.size() == 1);
  double megatron = 1e300;
  for (const std::int64_t v : {2, 3, 4, 6}) {
    config::StrategyInput s;
    s.gpus = 1024;
    s.tp = 8;
    s.pp = 8;
    s.global_batch_size = 1536;
    s.vpp = v;
    s.recompute = "full";
    const auto out = test::simulate(request.model, request.hardware, s, simulate::Mode::Auto);
    megatron = std::min(megatron, out.result.step_time_s);
  }
  CHECK(best.best.front().result.step_time_s <= megatron);
}

TEST_CASE("The search runs Megatron-LM's schedules unless told otherwise, and each run once", "[plan]") {
  auto request = small_request(10);
  const auto schedules_of = [](const plan::PlanRequest& r) {
    std::set<std::string> out;
    for (const auto& s : plan::enumerate(r))
      if (s.pp.value_or(1) > 1) out.insert(s.schedule.value_or("1f1b"));
    return out;
  };
  // Megatron-LM's get_forward_backward_func: 1F1B, with or without interleaving.
  CHECK(schedules_of(request) == std::set<std::string>{"1f1b", "interleaved"});
  request.schedules = {"zb-h1", "dualpipe", "gpipe"};
  CHECK(schedules_of(request) == std::set<std::string>{"zb-h1", "dualpipe", "gpipe"});
  request.schedules.clear();
  request.fixed.schedule = "zb-h2";  // pinned by name: searched whatever the list
  CHECK(schedules_of(request) == std::set<std::string>{"zb-h2"});
  request.fixed.schedule.reset();
  // One data-parallel rank shards nothing: no ZeRO 1 twin of a ZeRO 0 run.
  for (const auto& s : plan::enumerate(request))
    if (s.dp.value_or(1) * s.cp.value_or(1) == 1) CHECK(s.zero.value_or(0) == 0);
  std::size_t replicated = 0;
  for (const auto& s : plan::enumerate(request))
    if (s.dp.value_or(1) > 1 && s.zero.value_or(0) == 1) ++replicated;
  CHECK(replicated > 0);  // where there are replicas, ZeRO 1 is still searched
}

TEST_CASE("A search's progress: one more simulated each time, the best so far, a count left that never grows",
          "[plan]") {
  auto request = small_request(3);
  request.threads = 1;
  std::vector<plan::SearchProgress> seen;
  const auto result = plan::plan(request, [&](const plan::SearchProgress& p) { seen.push_back(p); });
  REQUIRE(seen.size() == result.simulated);
  REQUIRE(result.pruned_bound > 0);  // pruning is what makes the count fall faster than one a step
  double best = 1e300;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    INFO(i);
    CHECK(seen[i].simulated == i + 1);
    if (i > 0) CHECK(seen[i].at_most_left <= seen[i - 1].at_most_left);
    if (i > 0) CHECK(seen[i].elapsed_s >= seen[i - 1].elapsed_s);
    if (seen[i].best_step_s) {
      CHECK(*seen[i].best_step_s <= best);  // only improves
      best = *seen[i].best_step_s;
    }
  }
  CHECK(seen.back().at_most_left == 0);
  CHECK(best == result.best.front().result.step_time_s);
}

TEST_CASE("With --recompute-modules the search tries selective recomputation of those modules", "[plan]") {
  // Under fused attention, recomputing core attention alone frees only the
  // softmax statistics: selective is left out of the search unless the
  // modules say what it reruns; then only its candidates carry them.
  auto request = small_request(10);
  const auto recompute_levels = [](const plan::PlanRequest& r) {
    std::set<std::string> levels;
    for (const auto& s : plan::enumerate(r)) {
      const std::string level = s.recompute.value_or("none");
      levels.insert(level);
      if (level != "selective") CHECK_FALSE(s.recompute_modules);
      if (level == "selective") CHECK(s.recompute_modules == "mlp");
    }
    return levels;
  };
  CHECK(recompute_levels(request) == std::set<std::string>{"none", "full"});
  request.fixed.recompute_modules = "mlp";
  CHECK(recompute_levels(request) == std::set<std::string>{"none", "selective", "full"});
  // The search simulates them to a ranking.
  CHECK_FALSE(plan::plan(request).best.empty());
}

TEST_CASE("Over eager or compiled kernels the search tries torchtitan's op checkpointing, its bounds below every step",
          "[plan][eager]") {
  auto request = small_request(1000);
  const auto levels = [](const plan::PlanRequest& r) {
    std::set<std::string> out;
    for (const auto& s : plan::enumerate(r)) out.insert(s.recompute.value_or("none"));
    return out;
  };
  CHECK(levels(request).count("op") == 0);  // ptsim's fused kernels: not torchtitan's
  request.fixed.kernel_fusion = GENERATE("eager", "compiled");
  request.fixed.fsdp = "fsdp2";
  CHECK(levels(request).count("op") == 1);
  const auto result = plan::plan(request);
  REQUIRE_FALSE(result.best.empty());
  bool op = false;
  for (const auto& c : result.best) {
    INFO(c.label);
    CHECK(c.lower_bound_s <= c.result.step_time_s);
    CHECK(c.strategy.zero == 3);  // FSDP is ZeRO-3
    op = op || c.strategy.recompute == "op";
  }
  CHECK(op);
}

TEST_CASE("Over torchao's Float8 in compiled blocks the bounds stay below every step", "[plan][float8]") {
  auto request = small_request(1000);
  const double memory = request.hardware.gpu.memory_bytes;
  request.hardware = test::shipped_hardware("h100-sxm5-80gb");  // FP8 tensor cores
  request.hardware.gpu.memory_bytes = memory;
  request.fixed.kernel_fusion = "compiled";
  request.fixed.fsdp = "fsdp2";
  request.fixed.precision = "fp8";
  request.fixed.fp8_param_gather = GENERATE(false, true);
  const auto result = plan::plan(request);
  REQUIRE_FALSE(result.best.empty());
  for (const auto& c : result.best) {
    INFO(c.label);
    CHECK(c.lower_bound_s <= c.result.step_time_s);
    CHECK(c.strategy.fp8_recipe.value_or("tensorwise") == "tensorwise");
  }
}

TEST_CASE("Hardware variants that share a candidate space each get the search of their own", "[plan]") {
  auto base = small_request(5);
  base.shard = {1, 2};
  // Other rates, the same NVLink domain: HBM 30% slower, NVLink at half its
  // rate, 12 GiB of memory (so the memory pruning differs too).
  auto variant = base;
  variant.hardware.gpu.memory_bandwidth_bytes_per_s *= 0.7;
  variant.hardware.nvlink.bandwidth_bytes_per_s *= 0.5;
  variant.hardware.gpu.memory_bytes = 12.0 * (1ull << 30);
  const plan::CandidateSpace space = plan::candidate_space(base);
  const plan::PlanResult alone = plan::plan(variant);
  const plan::PlanResult shared = plan::plan(variant, space);
  REQUIRE(!alone.best.empty());
  CHECK(shared.searched == alone.searched);
  CHECK(shared.invalid == alone.invalid);
  CHECK(shared.pruned_memory == alone.pruned_memory);
  CHECK(shared.pruned_bound == alone.pruned_bound);
  CHECK(shared.simulated == alone.simulated);
  REQUIRE(shared.best.size() == alone.best.size());
  for (std::size_t i = 0; i < alone.best.size(); ++i) {
    INFO(i);
    CHECK(shared.best[i].label == alone.best[i].label);
    CHECK(shared.best[i].index == alone.best[i].index);
    CHECK(shared.best[i].result.step_time_s == alone.best[i].result.step_time_s);  // the same simulation, bit for bit
    CHECK(shared.best[i].result.memory.peak_bytes == alone.best[i].result.memory.peak_bytes);
  }
  // The space serves its own request too, and the variant's rates, not the
  // base's, priced the variant's steps.
  const plan::PlanResult own = plan::plan(base, space);
  CHECK(own.best.front().result.step_time_s == plan::plan(base).best.front().result.step_time_s);
  CHECK(own.best.front().result.step_time_s != alone.best.front().result.step_time_s);
  // A space of another GPU count, domain or shard is refused.
  auto other = variant;
  other.gpus = 16;
  CHECK_THROWS_AS(plan::plan(other, space), std::logic_error);
  other = variant;
  other.hardware.nvlink.domain_gpus = 4;
  CHECK_THROWS_AS(plan::plan(other, space), std::logic_error);
  other = variant;
  other.shard = {0, 2};
  CHECK_THROWS_AS(plan::plan(other, space), std::logic_error);
}

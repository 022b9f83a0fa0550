// `ptsim kernels --by-module`: a step's kernel time by module and pass, from
// the calls of each op name (simulate::module_times).
#include <numeric>

#include "ptsim/config/resolve_run.hpp"
#include "ptsim/simulate/kernel_inventory.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {

simulate::KernelUse use(std::vector<std::string> names, std::vector<std::uint64_t> counts, double seconds) {
  simulate::KernelUse k;
  k.names = std::move(names);
  k.name_counts = std::move(counts);
  k.count = std::accumulate(k.name_counts.begin(), k.name_counts.end(), std::uint64_t{0});
  k.seconds = seconds;
  return k;
}

const simulate::ModuleTime& find(const std::vector<simulate::ModuleTime>& modules, const std::string& name) {
  for (const auto& m : modules)
    if (m.module == name) return m;
  FAIL("no module " << name);
  return modules.front();
}

}  // namespace

TEST_CASE("Kernel time is summed by module and pass from each op's own calls", "[simulate][kernels]") {
  const auto modules = simulate::module_times({
      use({"fwd.moe.experts.fc1", "bwd.moe.experts.fc2.dgrad"}, {3, 2}, 0.5),
      use({"recompute.mlp.fc1", "fwd.mlp.fc1"}, {1, 4}, 0.25),
      use({"optimizer.adam"}, {1}, 2.0),
      use({"fwd.ln1"}, {7}, 0.1),
      use({"bwd.ln1.bwd", "bwd.lm_head.dgrad"}, {7, 1}, 0.1),
  });
  REQUIRE(modules.size() == 5);
  CHECK(find(modules, "ln1").backward_s == Approx(0.7));
  CHECK(find(modules, "lm_head").backward_s == Approx(0.1));
  CHECK(find(modules, "moe.experts").forward_s == Approx(1.5));
  CHECK(find(modules, "moe.experts").backward_s == Approx(1.0));
  CHECK(find(modules, "moe.experts").calls == 5);
  CHECK(find(modules, "mlp.fc1").recompute_s == Approx(0.25));
  CHECK(find(modules, "mlp.fc1").forward_s == Approx(1.0));
  CHECK(find(modules, "optimizer.adam").other_s == Approx(2.0));
  CHECK(find(modules, "ln1").forward_s == Approx(0.7));
  // Longest first: moe.experts 2.5, optimizer.adam 2.0, ln1 1.4, mlp.fc1 1.25, lm_head 0.1.
  CHECK(modules.front().module == "moe.experts");
  CHECK(modules.back().module == "lm_head");
}

TEST_CASE("A step's modules account for every call and second of its kernels", "[simulate][kernels]") {
  const auto m = test::shipped_model("qwen3-30b-a3b");
  config::StrategyInput s;
  s.gpus = 8;
  s.ep = 8;
  s.global_batch_size = 8;
  s.seq_length = 4096;
  const auto run = config::resolve_run(m, s);
  const auto kernels = simulate::kernel_inventory(run.model, test::shipped_hardware("h100-sxm5-80gb"), run.parallel);
  double kernel_seconds = 0;
  std::uint64_t kernel_calls = 0;
  for (const auto& k : kernels) {
    REQUIRE(k.name_counts.size() == k.names.size());
    CHECK(std::accumulate(k.name_counts.begin(), k.name_counts.end(), std::uint64_t{0}) == k.count);
    kernel_seconds += k.seconds * static_cast<double>(k.count);
    kernel_calls += k.count;
  }
  double module_seconds = 0;
  std::uint64_t module_calls = 0;
  for (const auto& mod : simulate::module_times(kernels)) {
    module_seconds += mod.total_s();
    module_calls += mod.calls;
  }
  CHECK(module_seconds == Approx(kernel_seconds));
  CHECK(module_calls == kernel_calls);
}

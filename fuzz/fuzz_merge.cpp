// libFuzzer target: `ptsim merge`'s reader of plan shard files (ptsim plan
// --json), with the table and the CSV it prints from the merged ranking.
#include "fuzz_support.hpp"
#include "plan_output.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = ptsim::fuzz::write_input(data, size);
  ptsim::fuzz::expect_only_config_errors([&] {
    const nlohmann::ordered_json merged = ptsim::cli::merge_plan_files(std::vector<std::string>{path, path}, 0);
    (void)ptsim::cli::plan_table(merged);
    (void)ptsim::cli::plan_csv(merged);
  });
  return 0;
}

// nccl-tests logs as published, read by config::load_nccl_tests: the
// expectations are the logs' own lines (tests/data/nccl-tests/README.md).
#include "ptsim/config/load_nccl_tests.hpp"

#include "ptsim/common/error.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {
config::NcclTestsLog log_of(const std::string& name, const std::string& op = "") {
  return config::load_nccl_tests(test::data_path("nccl-tests/" + name), test::unchecked_inputs(), {.op = op});
}
}  // namespace

TEST_CASE("A whole nccl-tests log gives its collective, ranks, nodes and out-of-place rows", "[config][nccl]") {
  const auto log = log_of("h100-hgx-2x8-ib-ndr-allreduce.log", "all_reduce");
  CHECK(log.op == "all_reduce");
  CHECK(log.ranks == 16);  // "#  Rank  0" … "#  Rank 15"
  CHECK(log.nodes == 2);   // bm-h100-01, bm-h100-02
  CHECK(log.device == "NVIDIA H100 80GB HBM3");
  REQUIRE(log.points.size() == 32);  // 8 B … 16 GiB, doubling
  // First row: "8  2  float  sum  -1  68.52  0.00  0.00  0  24.70 …" (the
  // in-place 24.70 µs is not read).
  CHECK(log.points.front().bytes == 8);
  CHECK(log.points.front().time_s == Approx(68.52e-6));
  // Last row: "17179869184  4294967296  float  sum  -1  68652  250.24  469.21  0  68668 …".
  CHECK(log.points.back().bytes == 17179869184ull);
  CHECK(log.points.back().time_s == Approx(68652e-6));
  CHECK(log.points.back().algbw_GBps == Approx(250.24));
  CHECK(log.points.back().busbw_GBps == Approx(469.21));
  CHECK(log.points.back().line == 58);
}

TEST_CASE("Logs without rank lines, with launcher prefixes or in the old format", "[config][nccl]") {
  // Only the table, each line behind srun's "0: ": 2 nodes of 8, so busbw /
  // algbw = 2·15/16 = 1.875 (487.09 / 259.78 at 16 GiB) says 16 ranks.
  const auto efa = log_of("h100-p5-2x8-efa-allreduce.log", "all_reduce");
  CHECK(efa.ranks == 16);
  CHECK(efa.nodes == 0);  // not listed: taken to fill the profile's nodes
  CHECK(efa.points.size() == 32);
  CHECK(efa.points.back().busbw_GBps == Approx(487.09));
  // Open MPI's "[1,0]<stdout>:" tags; busbw / algbw = 1.75 = 2·7/8.
  const auto batch = log_of("h100-p5-awsbatch-allreduce.log", "all_reduce");
  CHECK(batch.ranks == 8);
  CHECK(batch.points.back().busbw_GBps == Approx(483.05));
  // An all_gather: busbw / algbw = 15/16, and the log names no binary.
  const auto gather = log_of("b200-gke-a4-2x8-allgather.log", "all_gather");
  CHECK(gather.ranks == 16);
  CHECK(gather.nodes == 2);
  CHECK(gather.points.back().busbw_GBps == Approx(260.03));
  // "--op all_reduce" on it contradicts its own columns.
  CHECK_THROWS_WITH(log_of("b200-gke-a4-2x8-allgather.log", "all_reduce"),
                    Catch::Contains("lists 16 ranks") && Catch::Contains("0.9375") && Catch::Contains("is --op right"));
  // Old format (no root column, "error" instead of "#wrong"), 5 of 128 rank
  // lines then "...": the rank count cannot be read off a two-decimal busbw
  // at 128 ranks (2·127/128 and 2·126/127 differ by 6e-5).
  CHECK_THROWS_WITH(log_of("a100-coreweave-16x8-hdr-allreduce.oldfmt.log", "all_reduce"),
                    Catch::Contains("lists only some of its '#  Rank' lines") && Catch::Contains("--ranks N"));
}

TEST_CASE("A cut log reads with the rank count its user gives, checked against what it shows", "[config][nccl]") {
  const auto read = [](const std::string& name, std::int64_t ranks) {
    return config::load_nccl_tests(test::data_path("nccl-tests/" + name), test::unchecked_inputs(),
                                   {.op = "all_reduce", .ranks = ranks});
  };
  // CoreWeave's A100 log: 16 nodes of 8 (its README), five rank lines kept.
  const auto log = read("a100-coreweave-16x8-hdr-allreduce.oldfmt.log", 128);
  CHECK(log.ranks == 128);
  CHECK(log.nodes == 0);  // not listed: the ranks fill the profile's nodes in order
  CHECK(log.points.back().busbw_GBps == Approx(44.74));
  // Its table's busbw/algbw (45.42 / 22.89 at 1 GiB, 1.984) rules out 64 ranks (1.969).
  CHECK_THROWS_WITH(read("a100-coreweave-16x8-hdr-allreduce.oldfmt.log", 64),
                    Catch::Contains("is not what all_reduce over --ranks 64 gives"));
  // It lists rank 4, which 4 ranks do not hold.
  CHECK_THROWS_WITH(read("a100-coreweave-16x8-hdr-allreduce.oldfmt.log", 4), Catch::Contains("lists rank 4"));
  // A log that lists every rank keeps its own count.
  CHECK_THROWS_WITH(read("h100-hgx-2x8-ib-ndr-allreduce.log", 32),
                    Catch::Contains("lists 16 ranks, not the 32 of --ranks"));
  CHECK(read("h100-hgx-2x8-ib-ndr-allreduce.log", 16).nodes == 2);
}

TEST_CASE("An excerpt whose rank lines run up to the table ends with the last rank", "[config][nccl]") {
  // CoreWeave's published GB200 runs keep one rank line each, right above the
  // table: "#  Rank 1439 … NVIDIA GB200". At 1,440 ranks busbw / algbw cannot
  // tell the count (150.95 / 75.53 = 1.9986, 2·1439/1440 = 1.99861, and the
  // counts around it agree as well at two decimals); the last rank can.
  const auto racks20 = log_of("gb200-nvl72-20rack-allreduce.partial.log", "all_reduce");
  CHECK(racks20.ranks == 1440);
  CHECK(racks20.nodes == 0);  // one host listed of 360: the ranks fill the profile's nodes
  CHECK(racks20.device == "NVIDIA GB200");
  REQUIRE(racks20.points.size() == 6);  // 512 MiB … 16 GiB
  CHECK(racks20.points.back().time_s == Approx(84625e-6));
  CHECK(log_of("gb200-nvl72-1rack-allreduce.partial.log", "all_reduce").ranks == 72);
  // The two-rack excerpt's one rank line says 143, but its table is of 128
  // ranks (810.41 / 408.40 = 1.98435 = 2·127/128; 2·143/144 = 1.98611): the
  // table wins (CoreWeave's 128-GPU multi-rack job, 64 GPUs in each rack).
  CHECK(log_of("gb200-nvl72-2rack-allreduce.partial.log", "all_reduce").ranks == 128);
  // A last rank line the table contradicts is not taken: rank 7 of a table
  // whose busbw / algbw is 2·15/16 says nothing, so the table decides alone.
  const std::string excerpt =
      "#  Rank  7 Group  0 Pid  1 on h device  7 [0x18] NVIDIA H100 80GB HBM3\n"
      "#\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n"
      "  1073741824  268435456  float  sum  -1  4000.0  268.44  503.32  0  4000.0  268.44  503.32  0\n";
  CHECK(config::parse_nccl_tests(excerpt, "pasted.log", {.op = "all_reduce"}).ranks == 16);
}

TEST_CASE("A log that cannot be read says where and why", "[config][nccl]") {
  const auto refused = [](const std::string& text, const std::string& op = "") {
    try {
      config::parse_nccl_tests(text, "pasted.log", {.op = op});
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string head =
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor)\n"
      "#  Rank  0 Group  0 Pid  1 on h device  0 [0x18] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid  1 on h device  1 [0x19] NVIDIA H100 80GB HBM3\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  CHECK_THAT(refused(head), Catch::Contains("has no data rows"));
  CHECK_THAT(refused(head + "  1048576  262144  float  sum  -1  10.0  104.86  104.86  0  10.0  1  1  0\n"),
             Catch::Contains("does not say which collective") && Catch::Contains("give --op"));
  CHECK(refused("./build/all_reduce_perf -b 1M -e 1M\n" + head +
                "  1048576  262144  float  sum  -1  10.0  104.86  104.86  0  10.0  1  1  0\n") == "accepted");
  CHECK_THAT(refused(head + "  1048576  262144  float  sum  -1  ten  104.86  104.86  0  10.0  1  1  0\n", "all_reduce"),
             Catch::Contains("pasted.log:5") && Catch::Contains("'ten'"));
  CHECK_THAT(refused(head + "  1048576  262144  float  sum  -1\n", "all_reduce"),
             Catch::Contains("pasted.log:5") && Catch::Contains("needs at least 8"));
  CHECK_THAT(refused("just some text\n"), Catch::Contains("holds no nccl-tests table"));
  CHECK_THAT(refused(head, "all_reduce_sum"), Catch::Contains("is not a collective nccl-tests runs"));
  CHECK_THAT(refused("# all_gather_perf and all_reduce_perf\n" + head +
                     "  1048576  262144  float  sum  -1  10.0  104.86  104.86  0  10.0  1  1  0\n"),
             Catch::Contains("names more than one collective"));
}

// nccl-tests output as a user pastes it (all_reduce_perf, all_gather_perf,
// reduce_scatter_perf, alltoall_perf …): the collective, the ranks and the
// nodes they ran on, and the out-of-place time and bandwidths per size, read
// from the log's own lines and columns.
//
//   # nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) …
//   #  Rank  0 Group  0 Pid  41242 on   node-01 device  0 [0x18] NVIDIA H100 80GB HBM3
//   …
//   #       size         count      type   redop    root     time   algbw   busbw #wrong     time …
//   #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us) …
//      536870912     134217728     float     sum      -1   2660.3  201.81  378.39      0   2658.4 …
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include "ptsim/config/input_files.hpp"

namespace ptsim::config {

struct NcclTestsPoint {
  std::uint64_t bytes = 0;  // nccl-tests' size: the all-reduce buffer, the all-gather output, the reduce-scatter input
  double time_s = 0;        // out of place
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::size_t line = 0;     // in the log, from 1
};

struct NcclTestsLog {
  std::string file;
  std::string op;         // all_reduce, all_gather, reduce_scatter, alltoall, broadcast, reduce, sendrecv
  std::int64_t ranks = 0; // "#  Rank" lines
  std::int64_t nodes = 0; // distinct hosts among them; 0 when the log does not list every rank
  std::string device;     // as the first rank line names it
  std::vector<NcclTestsPoint> points;
};

/// The collectives a log can hold, as ptsim names them.
const std::vector<std::string>& nccl_tests_ops();

/// What a user says of a log that the log may not: its collective (`op`,
/// taken when the log names none) and its rank count (`ranks`, for a log
/// whose rank lines were cut: checked against the lines it keeps and its
/// table's busbw/algbw).
struct NcclTestsHints {
  std::string op = {};
  std::optional<std::int64_t> ranks = std::nullopt;
};

/// Reads a log. The collective is the one the log names (its binary,
/// e.g. all_reduce_perf, or a "Collective test starting" line), else the
/// hint's; the ranks are its "#  Rank" lines, else what its table tells,
/// else the hint's. Throws ConfigError naming the file and line for anything
/// it cannot read, a log without data rows, a collective or rank count it
/// cannot tell, or a hint the log contradicts.
NcclTestsLog load_nccl_tests(const std::string& path, InputFiles& inputs, const NcclTestsHints& hints = {});

/// The same from text; `where` names it in messages.
NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& where, const NcclTestsHints& hints = {});

}  // namespace ptsim::config

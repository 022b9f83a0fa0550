// nccl-tests' conventions (see nccl_tests_format.hpp). The column widths
// are those of nccl-tests' src/common.cu (PRINT of "%12li  %12li  %8s  %6s
// %6i" then "%7s  %6s  %6s  %6s" per half), so that a predicted row sits
// under a measured one.
#include "nccl_tests_format.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <utility>

#include "ptsim/common/error.hpp"

namespace ptsim::cli {

using taskgraph::CollectiveKind;

std::vector<std::uint64_t> size_range(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor) {
  if (min_bytes > max_bytes)
    throw ConfigError(fmt::format("-b {} is more than -e {}; the range runs from -b up to -e", min_bytes, max_bytes));
  if (factor < 2) throw ConfigError(fmt::format("-f {}: the step factor must be at least 2", factor));
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = min_bytes; s <= max_bytes; s *= factor) {
    sizes.push_back(s);
    if (s > max_bytes / factor) break;  // the next step would overflow or pass -e
  }
  return sizes;
}

std::size_t datatype_bytes(const std::string& type) {
  static const std::pair<const char*, std::size_t> kTypes[] = {
      {"int8", 1},   {"uint8", 1},    {"int32", 4},    {"uint32", 4},  {"int64", 8},   {"uint64", 8},
      {"half", 2},   {"float", 4},    {"double", 8},   {"bfloat16", 2}, {"f8e4m3", 1}, {"f8e5m2", 1}};
  for (const auto& [name, bytes] : kTypes)
    if (type == name) return bytes;
  throw ConfigError(fmt::format("-d {}: not an nccl-tests data type; use int8, uint8, int32, uint32, int64, uint64, "
                                "half, float, double, bfloat16, f8e4m3 or f8e5m2",
                                type));
}

std::uint64_t element_count(CollectiveKind kind, std::uint64_t bytes, std::size_t type_bytes, std::int64_t ranks) {
  const std::uint64_t elements = bytes / type_bytes;
  const bool per_rank =
      kind == CollectiveKind::AllGather || kind == CollectiveKind::ReduceScatter || kind == CollectiveKind::AllToAll;
  return per_rank ? elements / static_cast<std::uint64_t>(std::max<std::int64_t>(ranks, 1)) : elements;
}

std::string redop_of(CollectiveKind kind) {
  const bool reduces = kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter ||
                       kind == CollectiveKind::Reduce;
  return reduces ? "sum" : "none";
}

int root_of(CollectiveKind kind) {
  return kind == CollectiveKind::Broadcast || kind == CollectiveKind::Reduce ? 0 : -1;
}

void print_nccl_tests_header(std::ostream& out) {
  fmt::print(out, "#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>30}  {:>30}\n", "", "", "", "", "", "out-of-place",
             "in-place");
  fmt::print(out, "#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}\n",
             "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
             "#wrong");
  fmt::print(out, "#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}\n",
             "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

void print_nccl_tests_row(std::ostream& out, std::uint64_t bytes, std::uint64_t count, const std::string& type,
                          CollectiveKind kind, double time_s, double algbw_GBps, double busbw_GBps) {
  const std::string half = fmt::format("{:>7.2f}  {:>6.2f}  {:>6.2f}  {:>6}", time_s * 1e6, algbw_GBps, busbw_GBps,
                                       "N/A");
  fmt::print(out, "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {}  {}\n", bytes, count, type, redop_of(kind), root_of(kind),
             half, half);
}

}  // namespace ptsim::cli

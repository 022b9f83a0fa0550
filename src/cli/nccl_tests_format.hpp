// nccl-tests' conventions on the command line and in its table: the size
// ranges of -b/-e/-f, the data types of -d, and the columns of its output
// (size, count, type, redop, root, then time, algbw, busbw, #wrong out of
// place and in place), so that `ptsim collective --format nccl-tests` lines up
// with a measured log row by row.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ptsim/taskgraph/task.hpp"

namespace ptsim::cli {

/// nccl-tests' -b MIN -e MAX -f FACTOR: MIN, MIN·FACTOR, … up to MAX.
/// Throws ConfigError naming the flags for MIN > MAX or FACTOR < 2.
std::vector<std::uint64_t> size_range(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor);

/// Bytes of one element of an nccl-tests data type (-d: int8, uint8, int32,
/// uint32, int64, uint64, half, float, double, bfloat16, f8e4m3, f8e5m2).
/// Throws ConfigError listing the types for any other name.
std::size_t datatype_bytes(const std::string& type);

/// nccl-tests' count column: elements per rank for all_gather,
/// reduce_scatter and alltoall (the buffer over the ranks), else of the buffer.
std::uint64_t element_count(taskgraph::CollectiveKind kind, std::uint64_t bytes, std::size_t type_bytes,
                            std::int64_t ranks);

/// nccl-tests' redop and root columns for the collective.
std::string redop_of(taskgraph::CollectiveKind kind);
int root_of(taskgraph::CollectiveKind kind);

/// The two header lines of nccl-tests' table.
void print_nccl_tests_header(std::ostream& out);

/// One row: ptsim predicts no difference between out of place and in place,
/// so both halves carry the prediction; #wrong is N/A (no data is checked,
/// as nccl-tests prints with -c 0).
void print_nccl_tests_row(std::ostream& out, std::uint64_t bytes, std::uint64_t count, const std::string& type,
                          taskgraph::CollectiveKind kind, double time_s, double algbw_GBps, double busbw_GBps);

}  // namespace ptsim::cli

// Workload: everything the engine runs for one training step — one Program
// per class of ranks (ranks that run the same program), which program each
// rank runs, and the communicators that tie ranks together. A program names
// communicators by slot ("the tp group"); each rank resolves a slot to its own
// communicator. Operations on one communicator match across its members in
// issue order, as NCCL requires: every member's k-th operation on a
// communicator is the same collective.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ptsim/common/ids.hpp"
#include "ptsim/taskgraph/program.hpp"

namespace ptsim::taskgraph {

using CommunicatorId = std::uint32_t;
inline constexpr CommunicatorId kNoCommunicator = std::numeric_limits<CommunicatorId>::max();

struct Communicator {
  std::vector<Rank> members;  // in the group's rank order; p2p: {sender, receiver}
  /// A channel folded onto a stand-in for its receiver (symmetric runs of a
  /// ring whose ranks repeat with a period shorter than the ring): the
  /// receiver is not simulated, and the stand-in — a simulated rank that
  /// runs as the receiver does, the sender itself when every rank of the
  /// ring runs alike — posts the receive here. The transfer is priced from
  /// sender to receiver and ends on the stand-in's in-links, which carry
  /// what the receiver's carry.
  std::optional<Rank> receiver_stand_in;
};

struct Workload {
  std::int64_t world_size = 0;
  std::vector<std::string> stream_names;     // Task::stream indexes these
  std::vector<std::string> category_names;   // Task::category indexes these
  std::vector<std::string> comm_slot_names;  // Task::comm_slot indexes these
  std::vector<std::string> op_names;         // Task::name indexes these
  /// For each stream, the reporting dimension its communication belongs to
  /// (an index into comm_slot_names' dimension labels is not needed: reports
  /// group streams by this label, e.g. "tp", "pp", "dp"); "" for compute.
  std::vector<std::string> stream_dimension;
  /// Bit s: stream s runs kernels. Kernels of different compute streams that
  /// run at once share the GPU: each progresses at 1/n of its speed while n
  /// run (two lanes of work interleaved on the SMs, e.g. DualPipe's
  /// overlapped forward and backward).
  std::uint32_t compute_stream_mask = 1;
  /// Bit s: stream s runs a copy engine's transfers (taskgraph::KernelClass::
  /// HostCopy): each at its own speed, neither sharing the GPU with kernels
  /// nor slowing them as communication does.
  std::uint32_t copy_stream_mask = 0;

  std::vector<Program> programs;
  std::vector<std::uint32_t> program_of_rank;          // size world_size
  std::vector<std::uint64_t> program_base_memory_bytes;  // resident before the step starts

  std::vector<Communicator> communicators;
  /// communicator_of[rank · comm_slot_names.size() + slot]; kNoCommunicator when unused.
  std::vector<CommunicatorId> communicator_of;

  CommunicatorId communicator(Rank rank, std::uint8_t slot) const {
    return communicator_of[static_cast<std::size_t>(rank) * comm_slot_names.size() + slot];
  }
  /// Interns a name into `table` and returns its index.
  static std::uint32_t intern(std::vector<std::string>& table, const std::string& name);
};

}  // namespace ptsim::taskgraph

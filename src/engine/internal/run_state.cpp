// Set-up and collection of a simulation run's state (see run_state.hpp).
#include "internal/run_state.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "ptsim/common/error.hpp"

namespace ptsim::engine::internal {

void RankState::allocate_nonzero(std::uint64_t bytes, Time now) {
  allocated += bytes;
  if (allocated > stats.peak_memory_bytes) {
    stats.peak_memory_bytes = allocated;
    stats.peak_memory_at = now;
  }
  if (samples != nullptr) samples->push_back({rank, now, allocated});
}

void RankState::release_nonzero(std::uint64_t bytes, Time now) {
  PTSIM_ASSERT(bytes <= allocated - stats.base_memory_bytes,
               fmt::format("rank {} frees {} bytes more than it allocated", rank,
                           bytes - (allocated - stats.base_memory_bytes)));
  allocated -= bytes;
  if (samples != nullptr) samples->push_back({rank, now, allocated});
}

void RankState::add_occupancy(std::uint32_t mask, Time spent) {
  if ((occupancy_used + 1) * 2 > occupancy.size()) {
    std::vector<OccupancySlot> old = std::move(occupancy);
    occupancy_bits = std::max(occupancy_bits + 1, 5);
    occupancy.assign(std::size_t{1} << occupancy_bits, OccupancySlot{});
    occupancy_used = 0;
    for (const OccupancySlot& slot : old)
      if (slot.used) add_occupancy(slot.mask, slot.time);
    recent_slot = {kNoSlot, kNoSlot};  // the slots moved
  }
  const std::size_t wrap = occupancy.size() - 1;
  std::size_t h = (mask * 2654435761u) >> (32 - occupancy_bits);
  while (occupancy[h].used) h = (h + 1) & wrap;
  occupancy[h] = {mask, true, spent};
  ++occupancy_used;
  remember(mask, h);
}

namespace {

std::vector<Rank> ranks_to_simulate(const taskgraph::Workload& w, const RunOptions& options) {
  if (options.ranks.empty()) {
    std::vector<Rank> all(static_cast<std::size_t>(w.world_size));
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<Rank>(i);
    return all;
  }
  PTSIM_ASSERT(std::is_sorted(options.ranks.begin(), options.ranks.end()),
               "ranks to simulate must be ascending");
  for (const Rank r : options.ranks)
    PTSIM_ASSERT(r >= 0 && r < w.world_size, "ranks to simulate lie in the world");
  return options.ranks;
}

}  // namespace

RunState::RunState(const taskgraph::Workload& w, const cost::CostModel& cost,
                   const RunOptions& options) {
  PTSIM_ASSERT(w.stream_names.size() <= 32, "at most 32 streams (busy masks use 32 bits)");
  PTSIM_ASSERT(w.program_of_rank.size() == static_cast<std::size_t>(w.world_size),
               "every rank runs a program");
  num_streams = static_cast<std::uint8_t>(w.stream_names.size());
  const std::vector<Rank> simulated = ranks_to_simulate(w, options);
  programs.resize(w.programs.size());
  ranks.resize(simulated.size());
  streams.resize(simulated.size() * num_streams);
  comms.resize(w.communicators.size());
  std::vector<std::uint8_t> recorded(static_cast<std::size_t>(w.world_size), 0);
  for (const Rank r : options.record_ranks) recorded.at(static_cast<std::size_t>(r)) = 1;
  std::vector<double> gpu_factor(static_cast<std::size_t>(w.world_size), 1.0);
  for (const auto& [r, factor] : options.slow_gpus) gpu_factor.at(static_cast<std::size_t>(r)) = factor;

  for (std::size_t i = 0; i < simulated.size(); ++i) {
    const Rank rank = simulated[i];
    const std::uint32_t pid = w.program_of_rank[static_cast<std::size_t>(rank)];
    if (!programs[pid])
      programs[pid] =
          std::make_unique<CompiledProgram>(compile_program(w.programs[pid], num_streams, w.comm_slot_names.size(), cost));
    RankState& r = ranks[i];
    r.rank = rank;
    r.program = programs[pid].get();
    r.done.assign((r.program->num_tasks() + 63) / 64, 0);
    for (std::uint8_t st = 0; st < num_streams; ++st) enter_instance(static_cast<std::uint32_t>(i), st, 0);
    r.allocated = w.program_base_memory_bytes[pid];
    r.stats.rank = rank;
    r.stats.base_memory_bytes = r.allocated;
    r.stats.peak_memory_bytes = r.allocated;
    r.stats.categories.resize(w.category_names.size());
    r.record = recorded[static_cast<std::size_t>(rank)] != 0;
    r.gpu_factor = gpu_factor[static_cast<std::size_t>(rank)];
    if (r.record) {
      r.samples = &samples;
      samples.push_back({rank, Time{}, r.allocated});
    }
    // Count the arrivals each communicator waits for: one per simulated
    // member, and a rank may reach a communicator through one slot only, or
    // its operations could interleave and NCCL's ordering rule would not
    // hold — except a channel folded onto its sender, whose one rank sends
    // through one slot and receives through another (each stream posts its
    // operations in order).
    const std::size_t slots = w.comm_slot_names.size();
    for (std::size_t s = 0; s < slots; ++s) {
      const auto id = w.communicator(rank, static_cast<std::uint8_t>(s));
      if (id == taskgraph::kNoCommunicator || !r.program->uses_slot[s]) continue;
      for (std::size_t s2 = 0; s2 < s; ++s2)
        PTSIM_ASSERT(w.communicator(rank, static_cast<std::uint8_t>(s2)) != id || w.communicators[id].receiver_stand_in,
                     "a rank reaches each communicator through one slot");
      ++comms[id].expected;
    }
  }
}

void RunState::enter_instance(std::uint32_t local, std::uint8_t s, std::uint32_t k) {
  StreamState& st = streams[static_cast<std::size_t>(local) * num_streams + s];
  const CompiledProgram& p = *ranks[local].program;
  st.instance_at = k;
  if (k >= p.stream_instances[s].size()) {
    st.cursor = st.end = nullptr;
    return;
  }
  const CompiledProgram::StreamInstance& instance = p.stream_instances[s][k];
  const auto& [begin, end] = p.block_stream_tasks[static_cast<std::size_t>(instance.block) * num_streams + s];
  st.base = instance.base;
  st.first_template = p.first_template[instance.block];
  if (p.host_issue) st.host_base_ns = p.stream_instance_host_ns[s][k];
  st.cursor = begin;
  st.end = end;
}

bool RunState::all_finished() const {
  for (const StreamState& st : streams)
    if (st.cursor != st.end) return false;
  return true;
}

RunResult RunState::collect(RunResult result) {
  result.ranks.reserve(ranks.size());
  for (RankState& r : ranks) {
    r.account(r.finish);
    for (const auto& slot : r.occupancy)
      if (slot.used) r.stats.occupancy[slot.mask] += slot.time;
    r.stats.finish = r.finish;
    result.makespan = std::max(result.makespan, r.finish);
    result.ranks.push_back(std::move(r.stats));
  }
  std::stable_sort(samples.begin(), samples.end(),
                   [](const MemorySample& a, const MemorySample& b) { return a.at < b.at; });
  result.memory_samples = std::move(samples);
  return result;
}

}  // namespace ptsim::engine::internal

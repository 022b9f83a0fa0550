// Strategy search (see planner.hpp).
#include "ptsim/plan/planner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <stdexcept>
#include <mutex>
#include <thread>

#include "internal/bounds.hpp"
#include "internal/interleaving.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/resolve_run.hpp"
#include "ptsim/simulate/simulate_step.hpp"
#include "ptsim/strategy/schedule.hpp"

namespace ptsim::plan {

namespace {

std::vector<std::int64_t> powers_of_two_up_to(std::int64_t n) {
  std::vector<std::int64_t> v;
  for (std::int64_t x = 1; x <= n; x *= 2) v.push_back(x);
  return v;
}

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> d;
  for (std::int64_t i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

bool divides(std::int64_t a, std::int64_t b) { return a > 0 && b % a == 0; }

// The ordering key of a finished candidate: objective, then enumeration index.
bool better(const PlannedStrategy& a, const PlannedStrategy& b, Objective o) {
  const double x = o == Objective::Cost ? a.cost : a.result.step_time_s;
  const double y = o == Objective::Cost ? b.cost : b.result.step_time_s;
  if (x != y) return x < y;
  return a.index < b.index;
}

}  // namespace

std::string describe(const config::StrategyInput& s) {
  std::string out = fmt::format("tp={} pp={} dp={}", s.tp.value_or(1), s.pp.value_or(1), s.dp.value_or(1));
  if (s.cp.value_or(1) > 1) out += fmt::format(" cp={}", *s.cp);
  if (s.ep.value_or(1) > 1) out += fmt::format(" ep={}", *s.ep);
  out +=
      fmt::format(" mbs={} {}", s.micro_batch_size.value_or(1),
                  s.schedule.value_or(std::string(strategy::to_string(strategy::default_schedule(s.vpp.value_or(1))))));
  if (s.vpp.value_or(1) > 1) out += fmt::format(" vpp={}", *s.vpp);
  out += fmt::format(" recompute={}", s.recompute.value_or("none"));
  if (s.sequence_parallel.value_or(false)) out += " sp";
  out += fmt::format(" zero={}", s.zero.value_or(0));
  return out;
}

const std::vector<std::string>& megatron_schedules() {
  static const std::vector<std::string> schedules = [] {
    std::vector<std::string> names;
    for (const strategy::ScheduleDescriptor& d : strategy::schedules())
      if (d.searched_by_default) names.emplace_back(d.name);
    return names;
  }();
  return schedules;
}

const std::vector<std::string>& searched_schedules(const PlanRequest& r) {
  return r.schedules.empty() ? megatron_schedules() : r.schedules;
}

std::vector<config::StrategyInput> enumerate(const PlanRequest& r) {
  const std::vector<std::string>& allowed = searched_schedules(r);
  const auto searched = [&](const std::string& schedule) {
    if (r.fixed.schedule) return *r.fixed.schedule == schedule;  // asked for by name
    return std::find(allowed.begin(), allowed.end(), schedule) != allowed.end();
  };
  const model::ModelSpec& m = r.model;
  const std::int64_t n = r.gpus;
  const std::int64_t seq = r.seq_length.value_or(m.seq_length);
  const std::int64_t domain = r.hardware.nvlink.domain_gpus;
  const bool flash = r.fixed.attention_backend.value_or("flash") != "unfused";  // fused kernels
  // torchtitan's modules: op checkpointing searched; their context
  // parallelism is PyTorch's, for causal models only (resolve_run).
  const bool torch_modules = r.fixed.kernel_fusion.value_or("fused") != "fused";
  std::vector<config::StrategyInput> out;
  std::size_t index = 0;
  const auto emit = [&](config::StrategyInput s) {
    if (static_cast<std::int64_t>(index++ % static_cast<std::size_t>(r.shard.count)) == r.shard.index)
      out.push_back(std::move(s));
  };
  // Tensor parallelism inside an NVLink domain, as practitioners keep it.
  for (const std::int64_t tp : powers_of_two_up_to(std::min(n, domain))) {
    if (r.fixed.tp && *r.fixed.tp != tp) continue;
    if (!divides(tp, m.num_attention_heads) || (!m.multi_latent_attention && !divides(tp, m.num_query_groups)))
      continue;
    if ((!m.is_moe() || m.first_dense_layers > 0) && !divides(tp, m.ffn_hidden_size)) continue;
    for (const std::int64_t cp : powers_of_two_up_to(16)) {
      if (r.fixed.cp ? *r.fixed.cp != cp : (cp > 1 && seq < 8192)) continue;  // CP pays off on long sequences
      if (cp > 1 && (seq % (2 * cp) != 0 || (torch_modules && !m.causal))) continue;
      if (cp == 1 && r.fixed.cp_rotate_method) continue;  // a rotate method asks for context parallelism
      if (n % (tp * cp) != 0) continue;
      for (const std::int64_t pp : divisors(n / (tp * cp))) {
        if (r.fixed.pp && *r.fixed.pp != pp) continue;
        if (pp > m.num_layers) break;
        const std::int64_t dp = n / (tp * cp * pp);
        if (r.global_batch_size % dp != 0) continue;
        const std::int64_t per_replica = r.global_batch_size / dp;
        std::vector<std::int64_t> eps{1};
        if (m.is_moe()) {
          eps.clear();
          for (const std::int64_t ep : divisors(m.num_moe_experts))
            if ((tp * cp * dp) % (tp * ep) == 0 && (!r.fixed.ep || *r.fixed.ep == ep)) eps.push_back(ep);
        }
        for (const std::int64_t ep : eps)
          for (const std::int64_t mbs : powers_of_two_up_to(std::min<std::int64_t>(16, per_replica))) {
            if (r.fixed.micro_batch_size && *r.fixed.micro_batch_size != mbs) continue;
            if (per_replica % mbs != 0) continue;
            const std::int64_t micro = per_replica / mbs;
            // Schedules (and interleaving depths) this pipeline can run.
            // Without a pipeline every schedule is the same run: 1F1B's name.
            // Every registered schedule whose rules this pipeline and these
            // micro-batches meet; interleaving at each depth that splits a
            // stage's layers into equal chunks (internal::interleaving_depths).
            std::vector<std::pair<std::string, std::int64_t>> schedules{
                {std::string(strategy::to_string(strategy::ScheduleKind::OneFOneB)), 1}};
            if (pp > 1) {
              schedules.clear();
              for (const strategy::ScheduleDescriptor& d : strategy::schedules()) {
                std::vector<std::int64_t> vpps{1};
                if (d.chunks_from_vpp) {
                  vpps.clear();
                  if (m.num_layers % pp == 0) vpps = internal::interleaving_depths(m.num_layers, pp);
                }
                for (const std::int64_t v : vpps) {
                  strategy::ScheduleShape shape;
                  shape.pp = pp;
                  shape.vpp = v;
                  shape.microbatches = micro;
                  if (d.check_pipeline(shape) || d.check_microbatches(shape)) continue;
                  schedules.emplace_back(d.name, v);
                }
              }
            }
            for (const auto& [schedule, vpp] : schedules) {
              if (pp > 1 ? !searched(schedule) : (r.fixed.schedule && *r.fixed.schedule != schedule)) continue;
              // FSDP is ZeRO-3 (resolve_run's check_fsdp).
              const std::optional<std::int64_t> fixed_zero =
                  r.fixed.fsdp ? std::optional<std::int64_t>(3) : r.fixed.zero;
              for (const char* recompute : {"none", "selective", "full", "op"}) {
                // torchtitan's op checkpointing runs over its PyTorch modules only.
                if (std::string(recompute) == "op" && !torch_modules) continue;
                // Under fused attention, recomputing core attention alone frees
                // only the softmax statistics for a rerun attention forward:
                // left out of the search unless --recompute-modules says what
                // selective reruns (ptsim simulate runs it when asked).
                if (std::string(recompute) == "selective" && flash && !r.fixed.recompute_modules) continue;
                if (r.fixed.recompute && *r.fixed.recompute != recompute) continue;
                for (const bool sp : {true, false}) {
                  if (sp && tp == 1) continue;
                  if (!sp && m.is_moe() && tp > 1) continue;
                  if (r.fixed.sequence_parallel && *r.fixed.sequence_parallel != sp) continue;
                  for (const std::int64_t zero : {0, 1, 2, 3}) {
                    if (zero >= 2 && pp > 1) continue;  // sharded gradients/parameters: every micro-batch
                    // One data-parallel rank shards nothing: ZeRO 1 is ZeRO 0's run.
                    if (zero > 0 && dp * cp == 1 && !fixed_zero) continue;
                    if (fixed_zero ? *fixed_zero != zero : zero >= 2) continue;
                    config::StrategyInput s = r.fixed;
                    s.gpus = n;
                    s.tp = tp;
                    s.cp = cp;
                    s.pp = pp;
                    s.dp = dp;
                    if (m.is_moe()) s.ep = ep;
                    s.micro_batch_size = mbs;
                    s.global_batch_size = r.global_batch_size;
                    if (r.seq_length) s.seq_length = *r.seq_length;
                    s.schedule = schedule;
                    if (vpp > 1) {
                      s.vpp = vpp;
                    } else {
                      s.vpp.reset();
                    }
                    s.recompute = recompute;
                    if (std::string(recompute) != "selective") s.recompute_modules.reset();
                    s.sequence_parallel = sp;
                    s.zero = zero;
                    // Megatron's overlap settings, as a practitioner turns them on.
                    s.overlap_grad_reduce = s.overlap_grad_reduce.value_or(true);
                    if (zero >= 1 && zero <= 2) s.overlap_param_gather = s.overlap_param_gather.value_or(true);
                    emit(std::move(s));
                  }
                }
              }
            }
          }
      }
    }
  }
  return out;
}

CandidateSpace candidate_space(const PlanRequest& r) {
  if (r.shard.count < 1 || r.shard.index < 0 || r.shard.index >= r.shard.count)
    throw ConfigError(fmt::format("shard {}/{} does not exist; give --shard I/N with 0 ≤ I < N", r.shard.index,
                                  r.shard.count));
  CandidateSpace space;
  space.gpus = r.gpus;
  space.domain_gpus = r.hardware.nvlink.domain_gpus;
  space.global_batch_size = r.global_batch_size;
  space.seq_length = r.seq_length;
  space.shard = r.shard;
  space.strategies = enumerate(r);
  space.runs.reserve(space.strategies.size());
  for (const config::StrategyInput& s : space.strategies) {
    try {
      space.runs.emplace_back(config::resolve_run(r.model, s));
    } catch (const ConfigError&) {
      space.runs.emplace_back(std::nullopt);
    }
  }
  return space;
}

PlanResult plan(const PlanRequest& r, const Progress& progress) { return plan(r, candidate_space(r), progress); }

PlanResult plan(const PlanRequest& r, const CandidateSpace& space, const Progress& progress) {
  if (space.gpus != r.gpus || space.domain_gpus != r.hardware.nvlink.domain_gpus ||
      space.global_batch_size != r.global_batch_size || space.seq_length != r.seq_length ||
      space.shard.index != r.shard.index || space.shard.count != r.shard.count)
    throw std::logic_error("plan: a candidate space is shared only by requests that differ in the hardware's rates");
  const auto started = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  PlanResult result;
  result.searched = space.strategies.size();
  // A candidate's place in the space, from its index in the whole enumeration.
  const auto place = [&](const PlannedStrategy& c) {
    return (c.index - static_cast<std::size_t>(r.shard.index)) / static_cast<std::size_t>(r.shard.count);
  };

  // Bound every resolved candidate; drop what cannot fit.
  internal::Bounds bounds(r.hardware, r.gpus);
  std::vector<PlannedStrategy> todo;
  todo.reserve(space.strategies.size());
  const double capacity = r.hardware.gpu.memory_bytes;
  for (std::size_t i = 0; i < space.strategies.size(); ++i) {
    if (!space.runs[i]) {
      ++result.invalid;
      continue;
    }
    const config::ResolvedRun& run = *space.runs[i];
    const strategy::ParallelConfig parallel = simulate::on_hardware(run.parallel, r.hardware);
    const internal::Estimate e = bounds.estimate(run.model, parallel);
    if (e.memory_bytes + parallel.memory_headroom_bytes > capacity) {
      ++result.pruned_memory;
      continue;
    }
    // The strategy is copied in only for those that reach the best (fold),
    // and labelled once at the end.
    PlannedStrategy c;
    c.index = i * static_cast<std::size_t>(r.shard.count) + static_cast<std::size_t>(r.shard.index);
    c.lower_bound_s = e.time_s;
    c.parallel = parallel;
    todo.push_back(std::move(c));
  }
  std::stable_sort(todo.begin(), todo.end(),
                   [](const PlannedStrategy& a, const PlannedStrategy& b) { return a.lower_bound_s < b.lower_bound_s; });

  // Simulate in bound order; skip a candidate whose bound cannot beat the
  // K-th best. The K-th best a candidate is judged by is that of exactly the
  // candidates kLag or more places ahead of it (waiting for them if need be),
  // never of whatever else happens to have finished: what is simulated and
  // pruned — and so every output — is the same at any thread count, without a
  // barrier that idles threads. The price is at most kLag simulations beyond
  // the point of pruning.
  constexpr std::size_t kLag = 16;
  const std::size_t n = todo.size();
  enum class State : std::uint8_t { Pending, Pruned, Done };
  std::vector<State> state(n, State::Pending);
  std::vector<PlannedStrategy> best;   // sorted, at most top: of the final prefix
  std::vector<double> kth_after{1e300};  // kth_after[j]: the K-th best time among candidates [0, j)
  std::size_t prefix = 0;              // candidates [0, prefix) are final and folded into `best`
  std::size_t simulated = 0, pruned = 0, over = 0, done = 0;
  const double gpus = static_cast<double>(r.gpus);
  std::mutex mutex;
  std::condition_variable advanced;
  std::exception_ptr failure;  // the first candidate that threw, rethrown on this thread
  std::atomic<std::size_t> next{0};
  // Under the lock: what is left at most — candidates started and not done,
  // and those not started whose bound is within the K-th best so far (the
  // bounds are sorted, so they are a prefix of the rest).
  std::size_t reported_left = n;
  const auto progress_at = [&](std::size_t finished) {
    SearchProgress p;
    p.simulated = finished;
    p.elapsed_s = elapsed();
    const std::size_t begun = std::min(next.load(), n);
    const double kth = best.size() < r.top ? 1e300 : best.back().result.step_time_s;
    const auto limit = static_cast<std::size_t>(
        std::upper_bound(todo.begin(), todo.end(), kth,
                         [](double t, const PlannedStrategy& c) { return t < c.lower_bound_s; }) -
        todo.begin());
    const std::size_t in_flight = begun - std::min(begun, finished + pruned);
    // Judged by the K-th best of candidates kLag places ahead, a few beyond
    // the current bound may still run; the count shown never grows.
    reported_left = std::min(reported_left, in_flight + (limit > begun ? limit - begun : 0));
    p.at_most_left = reported_left;
    if (!best.empty()) p.best_step_s = best.front().result.step_time_s;
    return p;
  };
  // Under the lock: fold the finished candidates at the front of the order.
  const auto fold = [&] {
    for (; prefix < n && state[prefix] != State::Pending; ++prefix) {
      PlannedStrategy& c = todo[prefix];
      if (state[prefix] == State::Done) {
        ++simulated;
        if (!c.result.memory.fits) {
          ++over;
        } else {
          const auto at = std::upper_bound(best.begin(), best.end(), c, [&](const PlannedStrategy& a,
                                                                             const PlannedStrategy& b) {
            return better(a, b, r.objective);
          });
          c.strategy = space.strategies[place(c)];
          best.insert(at, std::move(c));
          if (best.size() > r.top) best.pop_back();
        }
      }
      kth_after.push_back(best.size() < r.top ? 1e300 : best.back().result.step_time_s);
    }
    advanced.notify_all();
  };
  const auto worker = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      const std::size_t judge = i > kLag ? i - kLag : 0;
      {
        std::unique_lock lock(mutex);
        advanced.wait(lock, [&] { return prefix >= judge || failure; });
        if (failure) return;
        // Cost is time × a constant at a fixed GPU count: one bound serves both.
        if (todo[i].lower_bound_s > kth_after[judge]) {
          state[i] = State::Pruned;
          ++pruned;
          fold();
          continue;
        }
      }
      try {
        PlannedStrategy& c = todo[i];
        const simulate::Request request{space.runs[place(c)]->model, r.hardware, c.parallel,
                                        simulate::Mode::Auto,        {},         {}};
        c.result = simulate::simulate_step(request).result;
        c.result.simulation.wall_s.reset();  // a candidate's outputs carry no wall time
        c.cost = c.result.step_time_s * gpus * r.price_per_gpu_hour / 3600;
        const std::lock_guard lock(mutex);
        state[i] = State::Done;
        fold();
        ++done;
        if (progress) progress(progress_at(done));
      } catch (...) {
        const std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
        advanced.notify_all();
        return;
      }
    }
  };
  const unsigned wanted = r.threads > 0 ? r.threads : std::max(1u, std::thread::hardware_concurrency());
  const auto threads = static_cast<unsigned>(std::min<std::size_t>(wanted, std::max<std::size_t>(1, n)));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);

  for (PlannedStrategy& c : best) c.label = describe(c.strategy);
  result.best = std::move(best);
  result.simulated = simulated;
  result.pruned_bound = pruned;
  result.did_not_fit = over;
  result.wall_s = elapsed();
  return result;
}

PlanResult merge(const std::vector<PlanResult>& shards, std::size_t top) {
  PlanResult out;
  Objective objective = Objective::Time;
  for (const auto& s : shards) {
    out.searched += s.searched;
    out.invalid += s.invalid;
    out.pruned_memory += s.pruned_memory;
    out.pruned_bound += s.pruned_bound;
    out.simulated += s.simulated;
    out.did_not_fit += s.did_not_fit;
    if (s.wall_s) out.wall_s = std::max(out.wall_s.value_or(0.0), *s.wall_s);
    for (const auto& c : s.best) out.best.push_back(c);
  }
  std::sort(out.best.begin(), out.best.end(),
            [&](const PlannedStrategy& a, const PlannedStrategy& b) { return better(a, b, objective); });
  if (out.best.size() > top) out.best.resize(top);
  return out;
}

}  // namespace ptsim::plan

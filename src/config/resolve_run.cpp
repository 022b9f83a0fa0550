// Defaults and cross-file checks of a run (see resolve_run.hpp).
#include "ptsim/config/resolve_run.hpp"

#include <fmt/format.h>

#include <vector>

#include "ptsim/common/error.hpp"
#include "ptsim/strategy/rank_layout.hpp"

namespace ptsim::config {

namespace {

constexpr std::int64_t kMaxGpus = std::int64_t{1} << 24;      // 16.7 M GPUs
constexpr std::int64_t kMaxBatch = std::int64_t{1} << 31;
constexpr std::int64_t kMaxSeq = std::int64_t{1} << 24;

std::string divisors_hint(std::int64_t n) {
  std::vector<std::int64_t> d;
  for (std::int64_t i = 1; i <= n && d.size() < 8; ++i)
    if (n % i == 0) d.push_back(i);
  return fmt::format("{}", fmt::join(d, ", "));
}

class Checker {
 public:
  Checker(const StrategyInput& s, const model::ModelSpec& m) : s_(s), m_(m) {}

  std::int64_t bounded(const std::optional<std::int64_t>& v, std::int64_t fallback,
                       const std::string& field, std::int64_t max) const {
    const std::int64_t x = v.value_or(fallback);
    if (x < 1 || x > max)
      fail(field, x, fmt::format("must lie in [1, {}]", max), "use a realistic value");
    return x;
  }

  [[noreturn]] void fail(const std::string& field, std::int64_t value, const std::string& rule,
                         const std::string& fix) const {
    throw ConfigError(fmt::format("{} = {} {}; {}", s_.where(field), value, rule, fix));
  }

  [[noreturn]] void fail(const std::string& field, const std::string& value,
                         const std::string& rule, const std::string& fix) const {
    throw ConfigError(fmt::format("{} = {} {}; {}", s_.where(field), value, rule, fix));
  }

  const std::string& model_name() const { return m_.name; }

 private:
  const StrategyInput& s_;
  const model::ModelSpec& m_;
};

strategy::ScheduleKind schedule_of(const std::string& s) {
  if (s == "naive") return strategy::ScheduleKind::Naive;
  if (s == "gpipe") return strategy::ScheduleKind::GPipe;
  return strategy::ScheduleKind::OneFOneB;
}

}  // namespace

ResolvedRun resolve_run(const model::ModelSpec& model, const StrategyInput& s) {
  const Checker check(s, model);
  ResolvedRun run{model, {}};
  auto& m = run.model;
  auto& c = run.parallel;

  m.seq_length = check.bounded(s.seq_length, model.seq_length, "seq_length", kMaxSeq);
  c.tp = check.bounded(s.tp, 1, "tp", kMaxGpus);
  c.pp = check.bounded(s.pp, 1, "pp", kMaxGpus);
  if (m.num_attention_heads % c.tp != 0)
    check.fail("tp", c.tp,
               fmt::format("must divide num_attention_heads = {} (model {})",
                           m.num_attention_heads, m.name),
               fmt::format("choose one of {}", divisors_hint(m.num_attention_heads)));
  if (m.num_query_groups % c.tp != 0)
    check.fail("tp", c.tp,
               fmt::format("must divide num_query_groups = {} (model {}: key/value heads are split "
                           "over TP ranks)",
                           m.num_query_groups, m.name),
               fmt::format("choose one of {}", divisors_hint(m.num_query_groups)));
  if (m.ffn_hidden_size % c.tp != 0)
    check.fail("tp", c.tp,
               fmt::format("must divide ffn_hidden_size = {} (model {})", m.ffn_hidden_size, m.name),
               fmt::format("choose one of {}", divisors_hint(m.ffn_hidden_size)));
  if (c.pp > m.num_layers)
    check.fail("pp", c.pp,
               fmt::format("exceeds num_layers = {} (model {}): every stage needs a layer",
                           m.num_layers, m.name),
               fmt::format("use at most {} pipeline stages", m.num_layers));

  const std::int64_t model_parallel = c.tp * c.pp;

  if (!s.gpus && !s.dp)
    throw ConfigError("the number of GPUs is not set; give --gpus N (or --data-parallel-size, "
                      "from which GPUs = tp·pp·dp)");
  if (s.gpus) {
    c.world_size = check.bounded(s.gpus, 1, "gpus", kMaxGpus);
    if (c.world_size % model_parallel != 0)
      check.fail("gpus", c.world_size,
                 fmt::format("is not a multiple of tp·pp = {}·{} = {}", c.tp, c.pp, model_parallel),
                 "choose tp and pp whose product divides the GPU count");
    c.dp = c.world_size / model_parallel;
    if (s.dp && *s.dp != c.dp)
      check.fail("dp", *s.dp,
                 fmt::format("does not match the world size: gpus = {} ≠ tp·pp·dp = {}·{}·{} = {}",
                             c.world_size, c.tp, c.pp, *s.dp, model_parallel * *s.dp),
                 fmt::format("set --dp {} or omit --dp to derive it", c.dp));
  } else {
    c.dp = check.bounded(s.dp, 1, "dp", kMaxGpus);
    c.world_size = model_parallel * c.dp;
    if (c.world_size > kMaxGpus)
      check.fail("dp", c.dp, fmt::format("makes tp·pp·dp = {} GPUs, more than {}", c.world_size,
                                         kMaxGpus),
                 "use fewer GPUs");
  }

  const std::string schedule = s.schedule.value_or("1f1b");
  if (schedule != "naive" && schedule != "gpipe" && schedule != "1f1b")
    check.fail("schedule", schedule, "is not a schedule ptsim knows", "use naive, gpipe or 1f1b");
  c.schedule = schedule_of(schedule);
  const std::string recompute = s.recompute.value_or("none");
  if (recompute != "none" && recompute != "full")
    check.fail("recompute", recompute, "is not a recomputation mode", "use none or full");
  c.recompute = recompute == "full" ? strategy::RecomputeKind::Full : strategy::RecomputeKind::None;

  const std::string attention = s.attention_backend.value_or("flash");
  if (attention != "flash" && attention != "unfused")
    check.fail("attention_backend", attention, "is not an attention backend", "use flash or unfused");
  c.attention = attention == "flash" ? strategy::AttentionBackend::Flash
                                     : strategy::AttentionBackend::Unfused;
  const std::string precision = s.precision.value_or("bf16");
  if (precision != "bf16" && precision != "fp8")
    check.fail("precision", precision, "is not a training precision", "use bf16 or fp8");
  c.precision = precision == "bf16" ? Dtype::Bf16 : Dtype::Fp8;

  c.rank_order = s.rank_order.value_or(strategy::kDefaultRankOrder);
  try {
    const strategy::RankLayout layout(c.tp, c.dp, c.pp, c.rank_order);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", s.where("rank_order"), e.what()));
  }

  if (!s.global_batch_size)
    throw ConfigError("the global batch size is not set; give --global-batch-size B "
                      "(sequences per training step over all data-parallel replicas)");
  c.global_batch_size = check.bounded(s.global_batch_size, 1, "global_batch_size", kMaxBatch);
  if (c.global_batch_size % c.dp != 0)
    check.fail("global_batch_size", c.global_batch_size,
               fmt::format("is not divisible by dp = {}", c.dp),
               fmt::format("use a multiple of {}", c.dp));
  const std::int64_t per_replica = c.global_batch_size / c.dp;
  if (c.schedule == strategy::ScheduleKind::Naive) {
    // Plain model parallelism runs each replica's whole batch as one micro-batch.
    if (s.micro_batch_size && *s.micro_batch_size != per_replica)
      check.fail("micro_batch_size", *s.micro_batch_size,
                 fmt::format("conflicts with --schedule naive, which runs the whole per-replica "
                             "batch (global {} / dp {} = {}) as one micro-batch",
                             c.global_batch_size, c.dp, per_replica),
                 fmt::format("omit --micro-batch-size or set it to {}", per_replica));
    c.micro_batch_size = per_replica;
  } else {
    c.micro_batch_size = check.bounded(s.micro_batch_size, 1, "micro_batch_size", kMaxBatch);
    if (per_replica % c.micro_batch_size != 0)
      check.fail("global_batch_size", c.global_batch_size,
                 fmt::format("is not divisible by micro_batch_size·dp = {}·{} = {}",
                             c.micro_batch_size, c.dp, c.micro_batch_size * c.dp),
                 fmt::format("use a multiple of {}", c.micro_batch_size * c.dp));
  }
  return run;
}

}  // namespace ptsim::config

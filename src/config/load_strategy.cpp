// Strategy files and merging (see strategy_input.hpp).
#include <fmt/format.h>

#include "internal/object_reader.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/strategy_input.hpp"

namespace ptsim::config {

namespace {

// Canonical field → (long JSON key, short JSON key or "", command-line flags).
struct FieldNames {
  const char* field;
  const char* long_key;
  const char* short_key;
  const char* flags;
};

constexpr FieldNames kFields[] = {
    {"gpus", "gpus", "", "--gpus"},
    {"tp", "tensor_model_parallel_size", "tp", "--tensor-model-parallel-size/--tp"},
    {"pp", "pipeline_model_parallel_size", "pp", "--pipeline-model-parallel-size/--pp"},
    {"dp", "data_parallel_size", "dp", "--data-parallel-size/--dp"},
    {"micro_batch_size", "micro_batch_size", "", "--micro-batch-size"},
    {"global_batch_size", "global_batch_size", "", "--global-batch-size"},
    {"seq_length", "seq_length", "", "--seq-length"},
    {"schedule", "schedule", "", "--schedule"},
    {"recompute", "recompute", "", "--recompute"},
    {"rank_order", "rank_order", "", "--rank-order"},
    {"attention_backend", "attention_backend", "", "--attention-backend"},
    {"precision", "precision", "", "--precision"},
};

constexpr std::int64_t kMaxCount = std::int64_t{1} << 40;

}  // namespace

std::string StrategyInput::where(const std::string& field) const {
  if (const auto it = origin.find(field); it != origin.end()) return it->second;
  for (const auto& f : kFields)
    if (field == f.field) return f.flags;
  return field;
}

StrategyInput load_strategy(const std::string& path) {
  const nlohmann::json object = internal::read_json_file(path);
  internal::ObjectReader in(object, path);
  StrategyInput s;
  for (const auto& f : kFields) {
    std::string key = f.long_key;
    const bool has_short = f.short_key[0] != '\0' && in.has(f.short_key);
    if (has_short && in.has(f.long_key))
      in.fail(f.short_key, fmt::format("repeats {}; give one of the two", f.long_key));
    if (has_short) key = f.short_key;
    if (f.short_key[0] != '\0') in.skip(f.short_key);
    in.skip(f.long_key);
    if (!in.has(key)) continue;
    s.origin[f.field] = in.locate(key);
    const std::string field = f.field;
    if (field == "schedule") {
      s.schedule = in.choice(key, {"naive", "gpipe", "1f1b"});
    } else if (field == "recompute") {
      s.recompute = in.choice(key, {"none", "full"});
    } else if (field == "rank_order") {
      s.rank_order = in.string(key);
    } else if (field == "attention_backend") {
      s.attention_backend = in.choice(key, {"flash", "unfused"});
    } else if (field == "precision") {
      s.precision = in.choice(key, {"bf16", "fp8"});
    } else {
      const std::int64_t v = in.integer(key, 1, kMaxCount);
      if (field == "gpus") s.gpus = v;
      if (field == "tp") s.tp = v;
      if (field == "pp") s.pp = v;
      if (field == "dp") s.dp = v;
      if (field == "micro_batch_size") s.micro_batch_size = v;
      if (field == "global_batch_size") s.global_batch_size = v;
      if (field == "seq_length") s.seq_length = v;
    }
  }
  in.reject_unknown_keys(
      "accepted keys: gpus, tensor_model_parallel_size (tp), pipeline_model_parallel_size (pp), "
      "data_parallel_size (dp), micro_batch_size, global_batch_size, seq_length, schedule, "
      "recompute, rank_order, attention_backend, precision");
  return s;
}

StrategyInput merge(StrategyInput base, const StrategyInput& o) {
  auto take = [&](auto& dst, const auto& src, const char* field) {
    if (!src) return;
    dst = src;
    if (const auto it = o.origin.find(field); it != o.origin.end()) {
      base.origin[field] = it->second;
    } else {
      base.origin.erase(field);
    }
  };
  take(base.gpus, o.gpus, "gpus");
  take(base.tp, o.tp, "tp");
  take(base.pp, o.pp, "pp");
  take(base.dp, o.dp, "dp");
  take(base.micro_batch_size, o.micro_batch_size, "micro_batch_size");
  take(base.global_batch_size, o.global_batch_size, "global_batch_size");
  take(base.seq_length, o.seq_length, "seq_length");
  take(base.schedule, o.schedule, "schedule");
  take(base.recompute, o.recompute, "recompute");
  take(base.rank_order, o.rank_order, "rank_order");
  take(base.attention_backend, o.attention_backend, "attention_backend");
  take(base.precision, o.precision, "precision");
  return base;
}

}  // namespace ptsim::config

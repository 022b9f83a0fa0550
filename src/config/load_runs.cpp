// Published run files (see load_runs.hpp). Strict like every reader: unknown
// keys, wrong types and bad values are errors naming the run and the key.
#include "ptsim/config/load_runs.hpp"

#include <fmt/format.h>

#include "internal/object_reader.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/load_model.hpp"
#include "ptsim/strategy/schedule.hpp"

namespace ptsim::config {

namespace {

constexpr std::int64_t kMaxCount = std::int64_t{1} << 24;

PublishedRun parse_run(const nlohmann::json& object, const std::string& file, std::size_t index) {
  const std::string where = fmt::format("{}: /runs/{}", file, index);
  if (!object.is_object()) throw ConfigError(fmt::format("{} must be an object", where));
  internal::ObjectReader in(object, file, fmt::format("/runs/{}", index));
  PublishedRun run;
  run.id = in.string("id");
  run.source = in.optional_string("source").value_or("");
  run.hardware = in.string("hardware");
  if (!object.contains("model") || !object.at("model").is_object())
    in.fail("model", "must be the run's model object (Megatron-LM names)");
  in.skip("model");
  run.model = parse_model(object.at("model"), fmt::format("{}/model", where), run.id);
  StrategyInput& s = run.strategy;
  const auto note = [&](const std::string& field, const internal::ObjectReader& r, const std::string& key) {
    s.origin[field] = r.locate(key);
  };
  s.gpus = in.integer("num_gpus", 1, kMaxCount);
  note("gpus", in, "num_gpus");

  internal::ObjectReader p = in.object("parallel");
  const auto count = [&](const char* key, const char* field, std::optional<std::int64_t>& into, std::int64_t min) {
    into = p.optional_integer(key, min, kMaxCount);
    if (into) {
      note(field, p, key);
    } else {
      run.unpublished.push_back(field);
    }
  };
  count("tp", "tp", s.tp, 1);
  count("pp", "pp", s.pp, 1);
  count("dp", "dp", s.dp, 1);
  count("cp", "cp", s.cp, 1);
  count("ep", "ep", s.ep, 1);
  count("vpp", "vpp", s.vpp, 1);
  count("zero", "zero", s.zero, 0);
  if (s.zero && *s.zero > 3) p.fail("zero", "must be a ZeRO stage 0, 1, 2 or 3");
  s.sequence_parallel = p.optional_boolean("sequence_parallel");
  if (s.sequence_parallel) {
    note("sequence_parallel", p, "sequence_parallel");
  } else {
    run.unpublished.push_back("sequence_parallel");
  }
  s.recompute = p.optional_choice("recompute", {"none", "selective", "full", "op"});
  if (s.recompute) {
    note("recompute", p, "recompute");
  } else {
    run.unpublished.push_back("recompute");
  }
  // Every registered schedule but naive model parallelism, which a published
  // pipeline run does not use (it runs one micro-batch).
  std::vector<std::string> schedules;
  for (const std::string_view name : strategy::schedule_names())
    if (name != strategy::to_string(strategy::ScheduleKind::Naive)) schedules.emplace_back(name);
  s.schedule = p.optional_choice("schedule", schedules);
  if (s.schedule) {
    note("schedule", p, "schedule");
  } else {
    run.unpublished.push_back("schedule");
  }
  p.reject_unknown_keys("accepted keys: tp, pp, dp, cp, ep, vpp, sequence_parallel, recompute, zero, schedule");

  internal::ObjectReader b = in.object("batch");
  s.global_batch_size = b.integer("global_batch_size", 1, std::int64_t{1} << 31);
  note("global_batch_size", b, "global_batch_size");
  s.micro_batch_size = b.optional_integer("micro_batch_size", 1, std::int64_t{1} << 31);
  if (s.micro_batch_size) {
    note("micro_batch_size", b, "micro_batch_size");
  } else {
    run.unpublished.push_back("micro_batch_size");
  }
  b.reject_unknown_keys("accepted keys: global_batch_size, micro_batch_size");

  // "mxfp8" names FP8 under the MXFP8 recipe, as published tables name it.
  s.precision = in.optional_choice("precision", {"bf16", "fp8", "mxfp8", "nvfp4"}).value_or("bf16");
  if (*s.precision == "mxfp8") {
    s.precision = "fp8";
    s.fp8_recipe = "mxfp8";
    note("fp8_recipe", in, "precision");
  }
  internal::ObjectReader m = in.object("measured");
  run.measured_step_time_s = m.number("step_time_s", 1e-6, 1e7);
  run.derived_from = m.optional_string("derived_from").value_or("");
  m.reject_unknown_keys("accepted keys: step_time_s, derived_from");
  in.reject_unknown_keys("accepted keys: id, source, model, hardware, num_gpus, parallel, batch, precision, measured");
  return run;
}

}  // namespace

PublishedRuns load_runs(const std::string& path, InputFiles& inputs) {
  const nlohmann::json document = internal::read_json_file(path, inputs);
  internal::ObjectReader in(document, path);
  const std::string schema = in.string("schema");
  if (schema != "ptsim-runs/1") in.fail("schema", "is not a run schema ptsim reads; expected \"ptsim-runs/1\"");
  in.skip("note");
  const nlohmann::json& runs = in.array("runs");
  in.reject_unknown_keys("accepted keys: schema, note, runs");
  if (runs.empty()) in.fail("runs", "is empty; a run file holds at least one run");
  PublishedRuns out{path, {}};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    out.runs.push_back(parse_run(runs[i], path, i));
    for (std::size_t j = 0; j < i; ++j)
      if (out.runs[j].id == out.runs[i].id)
        throw ConfigError(fmt::format("{}: /runs/{}/id = \"{}\" repeats run {}; ids must be unique", path, i,
                                      out.runs[i].id, j));
  }
  return out;
}

}  // namespace ptsim::config

// Plan outputs (see plan_output.hpp).
#include "plan_output.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <variant>

#include "ptsim/common/error.hpp"
#include "ptsim/common/parse_number.hpp"
#include "ptsim/plan/planner.hpp"
#include "ptsim/report/json_report.hpp"
#include "ptsim/strategy/schedule.hpp"

namespace ptsim::cli {

nlohmann::ordered_json strategy_json(const config::StrategyInput& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& f : config::strategy_fields())
    std::visit(
        [&](auto member) {
          if (s.*member) j[f.key] = *(s.*member);
        },
        f.member);
  return j;
}

namespace {

double objective_value(const nlohmann::ordered_json& c, const std::string& objective) {
  return objective == "cost" ? c.at("cost_usd").get<double>() : c.at("step_time_s").get<double>();
}

std::string memory_text(double bytes) { return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024 * 1024)); }

}  // namespace

nlohmann::ordered_json plan_json(const plan::PlanResult& result, const plan::PlanRequest& request) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["model"] = request.model.name;
  j["hardware"] = request.hardware.name;
  j["gpus"] = request.gpus;
  j["global_batch_size"] = request.global_batch_size;
  j["seq_length"] = request.seq_length.value_or(request.model.seq_length);
  j["objective"] = request.objective == plan::Objective::Cost ? "cost" : "time";
  j["top"] = request.top;
  j["shard"] = {{"index", request.shard.index}, {"count", request.shard.count}};
  j["schedules"] = plan::searched_schedules(request);
  j["searched"] = result.searched;
  j["invalid"] = result.invalid;
  j["pruned"] = result.pruned_memory + result.pruned_bound;
  j["pruned_memory"] = result.pruned_memory;
  j["pruned_bound"] = result.pruned_bound;
  j["simulated"] = result.simulated;
  j["did_not_fit"] = result.did_not_fit;
  if (result.wall_s) j["wall_s"] = *result.wall_s;  // only with --timing
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < result.best.size(); ++i) {
    const auto& c = result.best[i];
    const auto& r = c.result;
    nlohmann::ordered_json exposed = nlohmann::ordered_json::object();
    for (const auto& [dim, d] : r.communication)
      if (d.exposed_s > 0) exposed[dim] = d.exposed_s;
    list.push_back({{"rank", i + 1},
                    {"index", c.index},
                    {"label", c.label},
                    {"strategy", strategy_json(c.strategy)},
                    {"step_time_s", r.step_time_s},
                    {"mfu", r.throughput.mfu},
                    {"tokens_per_s", r.throughput.tokens_per_s},
                    {"peak_memory_bytes", r.memory.peak_bytes},
                    {"fits", r.memory.fits},
                    {"cost_usd", c.cost},
                    {"lower_bound_s", c.lower_bound_s},
                    {"breakdown_s", report::breakdown_json(r.breakdown)},
                    {"exposed_communication_s", exposed}});
  }
  j["candidates"] = list;
  return j;
}

std::string plan_table(const nlohmann::ordered_json& plan) {
  std::string out = fmt::format(
      "{} on {} GPUs ({}), global batch {}, sequence {}: searched {} strategies, {} invalid, {} pruned (memory {}, "
      "bound {}), simulated {} ({} over memory){}\n",
      plan.at("model").get<std::string>(), plan.at("gpus").get<std::int64_t>(), plan.at("hardware").get<std::string>(),
      plan.at("global_batch_size").get<std::int64_t>(), plan.at("seq_length").get<std::int64_t>(),
      plan.at("searched").get<std::size_t>(), plan.at("invalid").get<std::size_t>(), plan.at("pruned").get<std::size_t>(),
      plan.at("pruned_memory").get<std::size_t>(), plan.at("pruned_bound").get<std::size_t>(),
      plan.at("simulated").get<std::size_t>(), plan.at("did_not_fit").get<std::size_t>(),
      plan.contains("wall_s") ? fmt::format(" in {:.2f} s", plan.at("wall_s").get<double>()) : "");
  if (plan.contains("schedules")) {
    const auto schedules = plan.at("schedules").get<std::vector<std::string>>();
    const bool megatron = schedules == plan::megatron_schedules();
    out += fmt::format("pipeline schedules searched: {}{}\n", fmt::join(schedules, ", "),
                       megatron ? " (what Megatron-LM runs; --schedules searches others)" : "");
  }
  out += fmt::format("{:>4} {:>10} {:>6} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8}  {}\n", "rank", "step", "MFU",
                     "memory", "compute", "bubble", "host", "exposed", "optim", "strategy");
  for (const auto& c : plan.at("candidates")) {
    const auto& b = c.at("breakdown_s");
    out += fmt::format("{:>4} {:>9.3f}s {:>5.1f}% {:>10} {:>8.3f}s {:>8.3f}s {:>8.3f}s {:>8.3f}s {:>7.3f}s  {}\n",
                       c.at("rank").get<std::size_t>(), c.at("step_time_s").get<double>(),
                       100 * c.at("mfu").get<double>(), memory_text(c.at("peak_memory_bytes").get<double>()),
                       b.at("compute").get<double>(), b.at("pipeline_bubble").get<double>(),
                       b.at("host_issue").get<double>(), b.at("exposed_communication").get<double>(),
                       b.at("optimizer").get<double>(),
                       c.at("label").get<std::string>());
  }
  return out;
}

void print_plan(const plan::PlanResult& result, const plan::PlanRequest& request, std::ostream& out) {
  out << plan_table(plan_json(result, request));
}

std::string plan_csv(const nlohmann::ordered_json& plan) {
  std::string out =
      "rank,step_time_s,mfu,peak_memory_bytes,compute_s,pipeline_bubble_s,exposed_communication_s,optimizer_s,"
      "cost_usd,tp,pp,dp,cp,ep,micro_batch_size,schedule,vpp,recompute,sequence_parallel,zero,host_issue_s\n";
  for (const auto& c : plan.at("candidates")) {
    const auto& s = c.at("strategy");
    const auto get = [&](const char* key, const std::string& fallback) {
      if (!s.contains(key)) return fallback;
      const auto& v = s.at(key);
      return v.is_string() ? v.get<std::string>() : v.dump();
    };
    const std::string vpp = get("virtual_pipeline_model_parallel_size", "1");
    const std::string schedule =
        get("schedule", std::string(strategy::to_string(strategy::default_schedule(whole_number(vpp).value_or(1)))));
    const auto& b = c.at("breakdown_s");
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                       c.at("rank").get<std::size_t>(), c.at("step_time_s").get<double>(), c.at("mfu").get<double>(),
                       c.at("peak_memory_bytes").get<std::uint64_t>(), b.at("compute").get<double>(),
                       b.at("pipeline_bubble").get<double>(), b.at("exposed_communication").get<double>(),
                       b.at("optimizer").get<double>(), c.at("cost_usd").get<double>(),
                       get("tensor_model_parallel_size", "1"), get("pipeline_model_parallel_size", "1"),
                       get("data_parallel_size", "1"), get("context_parallel_size", "1"),
                       get("expert_model_parallel_size", "1"), get("micro_batch_size", "1"), schedule, vpp,
                       get("recompute", "none"), get("sequence_parallel", "false"), get("zero", "0"),
                       b.at("host_issue").get<double>());
  }
  return out;
}

nlohmann::ordered_json merge_plan_files(const std::vector<std::string>& files, std::size_t top) {
  std::vector<nlohmann::ordered_json> plans;
  for (const auto& file : files) {
    std::ifstream in(file);
    if (!in) throw ConfigError(fmt::format("{}: cannot open the shard file", file));
    try {
      plans.push_back(nlohmann::ordered_json::parse(in));
    } catch (const nlohmann::json::exception& e) {
      throw ConfigError(fmt::format("{}: not valid JSON ({})", file, e.what()));
    }
  }
  return merge_plan_files(plans, files, top);
}

namespace {

// A whole number a shard file must hold at `key` of `object`: nlohmann's get
// would convert 1e30 or -1 into an integer type without complaint (undefined
// for floats out of range; found by fuzz_merge).
void check_count(const nlohmann::ordered_json& object, const char* key, const std::string& file) {
  const auto& v = object.at(key);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    throw ConfigError(fmt::format("{}: {} = {} must be a whole number ≥ 0", file, key, v.dump()));
}

// A shard file is user input: every key the merge and its outputs read must
// be there with its type, or the file is refused by name (never exit 70).
void check_shard(const nlohmann::ordered_json& j, const std::string& file) {
  try {
    if (!j.is_object() || !j.contains("candidates") || !j.contains("shard"))
      throw ConfigError(fmt::format("{}: not the JSON of ptsim plan --json (no candidates or shard)", file));
    for (const char* key : {"model", "hardware", "objective"}) (void)j.at(key).get<std::string>();
    for (const char* key : {"gpus", "global_batch_size", "seq_length", "searched", "invalid", "pruned",
                            "pruned_memory", "pruned_bound", "simulated", "did_not_fit", "top"})
      check_count(j, key, file);
    if (j.contains("wall_s")) (void)j.at("wall_s").get<double>();
    const std::string objective = j.at("objective").get<std::string>();
    if (!j.at("candidates").is_array())
      throw ConfigError(fmt::format("{}: /candidates must be an array", file));
    for (const auto& c : j.at("candidates")) {
      (void)objective_value(c, objective);
      for (const char* key : {"index", "rank", "peak_memory_bytes"}) check_count(c, key, file);
    }
    (void)plan_table(j);  // and every field the table and the CSV print
    (void)plan_csv(j);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(fmt::format("{}: not the JSON of ptsim plan --json: {}", file, e.what()));
  }
}

// The parts of one search, each once: the same shard count, every index
// from 0 to count − 1 exactly once. A missing shard would present an
// incomplete search as the ranking; a repeated one would list candidates twice.
void check_shards_complete(const std::vector<nlohmann::ordered_json>& plans, const std::vector<std::string>& sources) {
  std::size_t count = 0;
  std::vector<std::string> file_of;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const auto& shard = plans[i].at("shard");
    std::size_t index = 0, n = 0;
    try {
      index = shard.at("index").get<std::size_t>();
      n = shard.at("count").get<std::size_t>();
    } catch (const nlohmann::json::exception&) {
      throw ConfigError(fmt::format("{}: /shard must hold whole numbers index and count", sources[i]));
    }
    if (n == 0 || index >= n)
      throw ConfigError(fmt::format("{}: /shard {}/{} is not a shard of a search (index in [0, count))", sources[i],
                                    index, n));
    if (i == 0) {
      count = n;
      file_of.assign(n, "");
    } else if (n != count) {
      throw ConfigError(fmt::format("{}: shard {} of {}, but {} is a shard of {}; merge the parts of one search", sources[i],
                                    index, n, sources[0], count));
    }
    if (!file_of[index].empty())
      throw ConfigError(fmt::format("{}: shard {} of {} is given twice (also {}); give each shard once", sources[i],
                                    index, n, file_of[index]));
    file_of[index] = sources[i];
  }
  std::vector<std::string> missing;
  for (std::size_t k = 0; k < count; ++k)
    if (file_of[k].empty()) missing.push_back(fmt::format("{}/{}", k, count));
  if (!missing.empty())
    throw ConfigError(fmt::format("shard{} {} of the search {} missing: a ranking of part of the candidates is not "
                                  "the search's; give every shard's --json",
                                  missing.size() > 1 ? "s" : "", fmt::join(missing, ", "),
                                  missing.size() > 1 ? "are" : "is"));
}

}  // namespace

nlohmann::ordered_json merge_plan_files(const std::vector<nlohmann::ordered_json>& plans,
                                        const std::vector<std::string>& sources, std::size_t top) {
  PTSIM_ASSERT(plans.size() == sources.size(), "merge_plan_files: one source name per plan");
  if (plans.empty()) throw ConfigError("no shard outputs to merge; give at least one");
  for (std::size_t i = 0; i < plans.size(); ++i) check_shard(plans[i], sources[i]);
  check_shards_complete(plans, sources);
  nlohmann::ordered_json merged;
  std::vector<nlohmann::ordered_json> candidates;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const auto& j = plans[i];
    const auto& file = sources[i];
    if (!j.is_object() || !j.contains("candidates") || !j.contains("shard"))
      throw ConfigError(fmt::format("{}: not the JSON of ptsim plan --json (no candidates or shard)", file));
    if (merged.is_null()) {
      merged = j;
      merged["searched"] = merged["invalid"] = merged["pruned"] = merged["pruned_memory"] = merged["pruned_bound"] =
          merged["simulated"] = merged["did_not_fit"] = 0;
    } else {
      // A key a shard may lack (schedules, before plans wrote it) is null there.
      const auto value = [](const nlohmann::ordered_json& o, const char* key) {
        return o.contains(key) ? o.at(key) : nlohmann::ordered_json();
      };
      for (const char* key : {"model", "hardware", "gpus", "global_batch_size", "seq_length", "objective", "schedules"})
        if (value(j, key) != value(merged, key))
          throw ConfigError(fmt::format("{}: {} = {} differs from the first shard's {}; merge shards of one search",
                                        file, key, value(j, key).dump(), value(merged, key).dump()));
    }
    for (const char* key : {"searched", "invalid", "pruned", "pruned_memory", "pruned_bound", "simulated", "did_not_fit"})
      merged[key] = merged[key].get<std::size_t>() + j.at(key).get<std::size_t>();
    // A search's wall time is the slowest shard's, when every shard kept it.
    if (!j.contains("wall_s")) merged.erase("wall_s");
    else if (merged.contains("wall_s"))
      merged["wall_s"] = std::max(merged["wall_s"].get<double>(), j.at("wall_s").get<double>());
    for (const auto& c : j.at("candidates")) candidates.push_back(c);
  }
  const std::string objective = merged.at("objective").get<std::string>();
  std::sort(candidates.begin(), candidates.end(), [&](const auto& a, const auto& b) {
    const double x = objective_value(a, objective), y = objective_value(b, objective);
    if (x != y) return x < y;
    return a.at("index").template get<std::size_t>() < b.at("index").template get<std::size_t>();
  });
  if (top == 0) top = merged.at("top").get<std::size_t>();
  if (candidates.size() > top) candidates.resize(top);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    candidates[i]["rank"] = i + 1;
    list.push_back(candidates[i]);
  }
  merged["candidates"] = list;
  merged["top"] = top;
  merged["shard"] = {{"index", 0}, {"count", 1}};
  return merged;
}

}  // namespace ptsim::cli

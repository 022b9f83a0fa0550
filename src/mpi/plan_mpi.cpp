// ptsim-plan-mpi: `ptsim plan` spread over MPI ranks. Rank r of N searches
// shard r/N (cli::run_plan with --shard r/N), rank 0 gathers the shards' JSON
// over MPI and merges it (cli::merge_plan_files) into the unsharded ranking.
// A front end on top of cli/, like cli/main.cpp; it picks the same exit codes.
#include <fcntl.h>
#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "output_file.hpp"
#include "plan_output.hpp"
#include "ptsim/common/error.hpp"

namespace {

namespace fs = std::filesystem;
using ptsim::ConfigError;

constexpr const char* kUsage = R"(Usage: mpirun -n N ptsim-plan-mpi --model FILE --hw FILE --gpus N --global-batch-size B [options]

ptsim plan over MPI: rank r of N searches part r of the strategies (ptsim plan
--shard r/N), rank 0 gathers the parts over MPI (no shared file system needed),
prints the merged ranking — the one an unsharded search gives — and writes
--json/--csv. Takes ptsim plan's options except --shard. Each rank simulates
on every core it sees (--threads N to change it): start one rank per node, e.g.

  mpirun -n 4 --map-by ppr:1:node --bind-to none ptsim-plan-mpi \
      --model configs/models/gpt3-175b.json --hw hw_profiles/dgx-a100-superpod.json \
      --gpus 1024 --global-batch-size 1536 --top 10 --json plan.json

Exit codes: 0 success · 2 invalid input · 3 no strategy fits or a simulation cannot
finish · 70 internal error. A rank that fails prints its error and aborts the job.

ptsim plan's help follows.

)";

/// What the front end reads itself of ptsim plan's arguments; the rest goes
/// to every rank's run_plan unchanged.
struct FrontEndArgs {
  std::vector<std::string> plan_args;  // without --json, --csv, --quiet
  std::string json, csv;               // the merged outputs ("": none)
  std::vector<std::string> inputs;     // --model, --hw, --strategy: never overwritten
  bool help = false;
};

// "--name=value" or "--name value": the value, advancing i past it.
std::string option_value(const std::vector<std::string>& args, std::size_t& i, std::string_view name) {
  const std::string& token = args[i];
  if (token.size() > name.size() && token[name.size()] == '=') return token.substr(name.size() + 1);
  if (i + 1 >= args.size()) throw ConfigError(fmt::format("ptsim-plan-mpi: {} needs a value", name));
  return args[++i];
}

// The option a token names ("--json" of "--json=x"), or "" for a value or a
// positional argument.
std::string option_name(const std::string& token) {
  if (!token.starts_with("--")) return token == "-h" || token == "-q" ? token : "";
  return token.substr(0, token.find('='));
}

FrontEndArgs split_args(const std::vector<std::string>& args) {
  FrontEndArgs a;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string name = option_name(args[i]);
    if (name == "--shard")
      throw ConfigError("ptsim-plan-mpi: --shard is not allowed: every MPI rank searches its own shard (rank r of "
                        "N runs --shard r/N); run ptsim plan --shard I/N for a single part");
    if (name == "--json") {
      a.json = option_value(args, i, name);
    } else if (name == "--csv") {
      a.csv = option_value(args, i, name);
    } else if (name == "-q" || name == "--quiet") {
      // Every rank runs quietly anyway.
    } else if (name == "-h" || name == "--help") {
      a.help = true;
    } else if (name == "--model" || name == "--hw" || name == "--strategy") {
      a.plan_args.push_back(args[i]);
      const std::size_t at = i;
      a.inputs.push_back(option_value(args, i, name));
      if (i != at) a.plan_args.push_back(args[i]);
    } else {
      a.plan_args.push_back(args[i]);
    }
  }
  return a;
}

/// Prints the exception in flight as ptsim's main does, prefixed by `who`,
/// and returns main's exit code for it.
int report_exception(const std::string& who) {
  try {
    throw;
  } catch (const ConfigError& e) {
    fmt::print(stderr, "{}error: {}\n", who, e.what());
    return 2;
  } catch (const ptsim::SimulationError& e) {
    fmt::print(stderr, "{}simulation error: {}\n", who, e.what());
    return 3;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}internal error: {}\n", who, e.what());
    return 70;
  } catch (...) {
    fmt::print(stderr, "{}internal error: unknown exception\n", who);
    return 70;
  }
}

/// A fresh directory under the system's temporary directory, removed with
/// everything in it when this goes out of scope.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    std::string pattern = (fs::temp_directory_path() / "ptsim-plan-mpi-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr)
      throw ConfigError(fmt::format("{}: cannot create a temporary directory; set TMPDIR to a writable one", pattern));
    path_ = pattern;
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  ~TemporaryDirectory() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

/// Sends stderr to /dev/null while it lives. run_plan reports a shard
/// without a fitting strategy there, which is no news when other shards
/// have some; its errors it throws, and those are printed after.
class SilencedStderr {
 public:
  SilencedStderr() {
    std::fflush(stderr);
    saved_ = dup(STDERR_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    if (saved_ >= 0 && null >= 0) dup2(null, STDERR_FILENO);
    if (null >= 0) close(null);
  }
  SilencedStderr(const SilencedStderr&) = delete;
  SilencedStderr& operator=(const SilencedStderr&) = delete;
  ~SilencedStderr() {
    std::fflush(stderr);
    if (saved_ < 0) return;
    dup2(saved_, STDERR_FILENO);
    close(saved_);
  }

 private:
  int saved_ = -1;
};

/// This rank's shard of the search, as the JSON text ptsim plan --json writes.
std::string search_shard(const std::vector<std::string>& plan_args, int rank, int size) {
  const TemporaryDirectory directory;
  const fs::path file = directory.path() / fmt::format("shard-{}-of-{}.json", rank, size);
  std::vector<std::string> args = plan_args;
  args.insert(args.end(), {"--shard", fmt::format("{}/{}", rank, size), "--json", file.string(), "--quiet"});
  std::ostream null_stream(nullptr);  // the shard's table: only the merged one is printed
  {
    const SilencedStderr silenced;
    ptsim::cli::run_plan(args, null_stream);  // 3 (no fitting strategy in this shard) is no error here
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: the shard's JSON was not written", file.string()));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Every rank's text, in rank order, on rank 0 (empty elsewhere): MPI_Gather
/// of the lengths, then MPI_Gatherv of the bytes.
std::vector<std::string> gather_texts(const std::string& text, int rank, int size) {
  if (text.size() > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error(fmt::format("rank {}: its shard's JSON ({} bytes) is over MPI's 2 GiB message limit; "
                                         "lower --top",
                                         rank, text.size()));
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(rank == 0 ? static_cast<std::size_t>(size) : 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(lengths.size());
  std::int64_t total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    if (total + lengths[r] > INT_MAX)
      throw std::runtime_error(fmt::format("the shards' JSON is over MPI's 2 GiB message limit at rank {}; lower --top", r));
    offsets[r] = static_cast<int>(total);
    total += lengths[r];
  }
  std::vector<char> bytes(static_cast<std::size_t>(total));
  MPI_Gatherv(text.data(), length, MPI_CHAR, bytes.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> texts;
  for (std::size_t r = 0; r < lengths.size(); ++r)
    texts.emplace_back(bytes.data() + offsets[r], static_cast<std::size_t>(lengths[r]));
  return texts;
}

/// Rank 0: merges the shards, prints the table, writes the outputs asked for.
int merge_and_write(const std::vector<std::string>& texts, const FrontEndArgs& a) {
  std::vector<nlohmann::ordered_json> plans;
  std::vector<std::string> sources;
  for (std::size_t r = 0; r < texts.size(); ++r) {
    sources.push_back(fmt::format("MPI rank {}'s shard {}/{}", r, r, texts.size()));
    try {
      plans.push_back(nlohmann::ordered_json::parse(texts[r]));
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(fmt::format("{}: its JSON does not parse ({})", sources.back(), e.what()));
    }
  }
  const nlohmann::ordered_json merged = ptsim::cli::merge_plan_files(plans, sources, 0);
  fmt::print("{}", ptsim::cli::plan_table(merged));
  std::fflush(stdout);
  ptsim::config::InputFiles read;
  for (const auto& path : a.inputs) read.record(path);
  if (!a.json.empty())
    ptsim::cli::write_output_file(a.json, read, [&](std::ostream& o) { o << merged.dump(2) << '\n'; });
  if (!a.csv.empty())
    ptsim::cli::write_output_file(a.csv, read, [&](std::ostream& o) { o << ptsim::cli::plan_csv(merged); });
  if (merged.at("candidates").empty()) {
    fmt::print(stderr, "ptsim-plan-mpi: no strategy fits in memory on {} GPUs; try more GPUs or a smaller batch\n",
               merged.at("gpus").get<std::int64_t>());
    return 3;
  }
  return 0;
}

// The rank's part of the run; returns its exit code, or aborts the job.
int run(const std::vector<std::string>& args, int rank, int size) {
  FrontEndArgs a;
  try {
    a = split_args(args);  // the same on every rank: rank 0 speaks for all
  } catch (...) {
    return rank == 0 ? report_exception("") : 2;
  }
  if (a.help) {
    if (rank != 0) return 0;
    fmt::print("{}", kUsage);
    std::fflush(stdout);
    return ptsim::cli::run_plan({"--help"}, std::cout);
  }
  std::string text;
  try {
    text = search_shard(a.plan_args, rank, size);
  } catch (...) {
    // Inputs may be missing on one node only (no shared file system): the
    // rank that fails stops the job rather than leave the others waiting.
    const int code = report_exception(fmt::format("ptsim-plan-mpi (rank {} of {}): ", rank, size));
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    return code;
  }
  std::vector<std::string> texts;
  try {
    texts = gather_texts(text, rank, size);
  } catch (...) {
    const int code = report_exception(fmt::format("ptsim-plan-mpi (rank {} of {}): ", rank, size));
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    return code;
  }
  if (rank != 0) return 0;
  try {
    return merge_and_write(texts, a);  // the other ranks are done: no one waits on rank 0 now
  } catch (...) {
    return report_exception("ptsim-plan-mpi: ");
  }
}

}  // namespace

int main(int argc, char** argv) {
  // The planner simulates on a thread pool; only this thread calls MPI.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int code = run(std::vector<std::string>(argv + 1, argv + argc), rank, size);
  MPI_Finalize();
  return code;
}

// Argument parsing shared by the commands (see parse_args.hpp).
#include "parse_args.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "ptsim/common/edit_distance.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::cli {

namespace po = boost::program_options;

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

namespace {

// Megatron-LM's architecture flags: what a pasted launch line carries, and
// what a command with --model reads from the model file instead.
bool megatron_model_flag(const std::string& name) {
  static const char* const kFlags[] = {
      "num-layers", "hidden-size", "num-attention-heads", "num-query-groups", "group-query-attention",
      "ffn-hidden-size", "kv-channels", "max-position-embeddings", "vocab-size", "swiglu", "normalization",
      "position-embedding-type", "untie-embeddings-and-output-weights", "disable-bias-linear", "num-experts",
      "moe-router-topk", "moe-ffn-hidden-size", "multi-latent-attention", "squared-relu"};
  return std::find(std::begin(kFlags), std::end(kFlags), name) != std::end(kFlags);
}

std::string bare_name(const std::string& given) {
  std::string name = given;
  name.erase(0, name.find_first_not_of('-'));
  return name.substr(0, name.find('='));
}

}  // namespace

std::string nearest_option(const std::string& given, const po::options_description& options) {
  const std::string name = bare_name(given);
  if (name.empty()) return "";
  std::string best;
  std::size_t best_distance = 0;
  for (const auto& o : options.options()) {
    const std::string& candidate = o->long_name();
    if (candidate.empty()) continue;
    // A prefix of a real flag ("--micro") is what guessing used to accept:
    // name the flag it would have become.
    const std::size_t distance = candidate.starts_with(name) ? 1 : edit_distance(name, candidate);
    if (best.empty() || distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  // Beyond about a third of the name's letters it is another word.
  if (best.empty() || best_distance > std::max<std::size_t>(2, name.size() / 3)) return "";
  return "--" + best;
}

void parse_args(const std::vector<std::string>& args, const po::options_description& options,
                const po::positional_options_description* positional, po::variables_map& vm,
                const std::string& command) {
  // Boost.Program_options fills its error templates ("the argument ('%value%')
  // for option '%canonical_option%' is invalid") by replacing placeholders
  // until none is left, so a value that itself holds one never finishes.
  // fuzz_cli found it: `ptsim simulate --ep 2%value%` hung.
  static const std::regex placeholder("%[a-z_]+%");
  for (const std::string& a : args) {
    std::smatch m;
    if (std::regex_search(a, m, placeholder))
      throw ConfigError(fmt::format("ptsim {}: argument '{}' contains '{}', which ptsim cannot quote in "
                                    "its messages; no flag takes such a value",
                                    command, a, m.str()));
  }
  try {
    // A command without positional arguments still collects stray words so
    // that they are refused by name: without a positional description Boost
    // drops them, and "--grad-reduce-in-bf16 false" would read as the switch.
    constexpr const char* kStray = "ptsim-stray-arguments";
    po::options_description all;
    all.add(options);
    po::positional_options_description stray;
    if (positional == nullptr) {
      all.add_options()(kStray, po::value<std::vector<std::string>>());
      stray.add(kStray, -1);
    }
    po::command_line_parser parser(args);
    parser.options(all);
    // Exact names only: Boost's default style takes any unambiguous prefix,
    // and Megatron's --num-layers became --num-layers-per-virtual-pipeline-stage.
    parser.style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing);
    parser.positional(positional != nullptr ? *positional : stray);
    po::store(parser.run(), vm);
    if (positional == nullptr && vm.count(kStray) != 0)
      throw ConfigError(
          fmt::format("ptsim {}: unexpected argument '{}': no flag takes it (switches take no "
                      "value); see ptsim {} --help",
                      command, vm[kStray].as<std::vector<std::string>>().front(), command));
    po::notify(vm);
  } catch (const po::unknown_option& e) {
    const std::string given = e.get_option_name();
    std::string hint;
    if (megatron_model_flag(bare_name(given)) && options.find_nothrow("model", false) != nullptr) {
      hint = fmt::format(" ({} is a Megatron-LM model flag: ptsim reads the model from --model FILE, its own "
                         "JSON with Megatron's names or a Hugging Face config.json)",
                         given);
    } else if (const std::string suggestion = nearest_option(given, options); !suggestion.empty()) {
      hint = fmt::format(" (did you mean {}?)", suggestion);
    }
    throw ConfigError(fmt::format("ptsim {}: {}{}; see ptsim {} --help", command, e.what(), hint, command));
  } catch (const po::error& e) {
    throw ConfigError(fmt::format("ptsim {}: {}; see ptsim {} --help", command, e.what(), command));
  }
}

}  // namespace ptsim::cli

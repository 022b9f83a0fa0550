// Argument parsing shared by the commands (see parse_args.hpp).
#include "parse_args.hpp"

#include <fmt/format.h>

#include <regex>
#include <sstream>

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
    po::command_line_parser parser(args);
    parser.options(options);
    if (positional != nullptr) parser.positional(*positional);
    po::store(parser.run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw ConfigError(fmt::format("ptsim {}: {}; see ptsim {} --help", command, e.what(), command));
  }
}

}  // namespace ptsim::cli

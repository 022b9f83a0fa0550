// The one place a ptsim command hands its arguments to Boost.Program_options.
#pragma once

#include <boost/program_options.hpp>
#include <string>
#include <vector>

namespace ptsim::cli {

/// A flag's comma-separated list ("a,b,c"), empty items dropped.
std::vector<std::string> comma_list(const std::string& text);

/// The long flag of `options` nearest to `given` ("--micro" → "--micro-batch-size",
/// "--tpp" → "--tp"), or "" when none is close: the flag a typo most likely meant.
std::string nearest_option(const std::string& given, const boost::program_options::options_description& options);

/// Parses `args` into `vm` (notify included) with exact flag names only, no
/// prefix guessing. Throws ConfigError naming the command — "ptsim plan: ...;
/// see ptsim plan --help" — for an unknown flag (with the nearest real one as
/// a suggestion), a bad value, or an argument holding a %placeholder% of
/// Boost's error templates (Boost would loop forever building the message).
void parse_args(const std::vector<std::string>& args, const boost::program_options::options_description& options,
                const boost::program_options::positional_options_description* positional,
                boost::program_options::variables_map& vm, const std::string& command);

}  // namespace ptsim::cli

// Runs the ptsim binary as a user would and captures what it printed; shared
// by the tests of its subcommands.
#pragma once

#include <sys/wait.h>

#include <fmt/core.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "test_support.hpp"

namespace ptsim::test {

struct BinaryResult {
  int code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// `ptsim ARGS` through the shell; the exit code, standard output and error.
inline BinaryResult run_ptsim(const std::string& args) {
  const std::string out = scratch_path("cli.out");
  const std::string err = scratch_path("cli.err");
  // fmt, not string concatenation: see source_path in test_support.hpp.
  const std::string cmd = fmt::format("{} {} >{} 2>{}", PTSIM_BINARY, args, out, err);
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

}  // namespace ptsim::test

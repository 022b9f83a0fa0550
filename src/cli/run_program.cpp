// Child processes without a shell (see run_program.hpp).
#include "run_program.hpp"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "ptsim/common/error.hpp"

extern char** environ;

namespace ptsim::cli {

int run_program(const std::vector<std::string>& argv) {
  PTSIM_ASSERT(!argv.empty(), "a program to run");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, argv[0].c_str(), nullptr, nullptr, args.data(), environ);
  if (error != 0) throw ConfigError(fmt::format("cannot run {}: {}", argv[0], std::strerror(error)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw ConfigError(fmt::format("waiting for {}: {}", argv[0], std::strerror(errno)));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

std::string executable_directory() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : self.parent_path().string();
}

}  // namespace ptsim::cli

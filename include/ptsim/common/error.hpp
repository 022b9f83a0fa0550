// The error policy of ptsim: library code throws one of these, only `main`
// prints and chooses the exit code (ConfigError → 2, SimulationError → 3).
#pragma once

#include <stdexcept>
#include <string>

namespace ptsim {

/// Bad input found before simulation starts: the message names the file or
/// flag, the key, the value, the rule it breaks and how to fix it.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The simulation cannot finish (a cycle, a deadlock, a mismatched
/// collective); the message names the blocked tasks and ranks.
class SimulationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A broken internal invariant: a bug in ptsim, never the user's fault.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void fail_invariant(const char* condition, const char* file, int line,
                                 const std::string& message);

}  // namespace ptsim

/// Checks an invariant in every build type (release included).
#define PTSIM_ASSERT(condition, message)                                      \
  do {                                                                        \
    if (!(condition)) ::ptsim::fail_invariant(#condition, __FILE__, __LINE__, \
                                              (message));                     \
  } while (false)

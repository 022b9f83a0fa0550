// Writing an output file safely: to a temporary file beside it, renamed into
// place when complete, so an interrupted run never leaves half a file; and
// never over one of the run's own inputs.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "ptsim/config/input_files.hpp"

namespace ptsim::cli {

/// Calls `write` with a stream to a temporary file, then renames it to
/// `path`. Throws ConfigError when `path` is one of the command's `inputs`
/// (the same file, however named) or cannot be written.
void write_output_file(const std::string& path, const config::InputFiles& inputs,
                       const std::function<void(std::ostream&)>& write);

/// One output of a run: its path and what writes it.
struct OutputFile {
  std::string path;
  std::function<void(std::ostream&)> write;
};

/// A run's outputs, whole or not at all: each is written to a temporary
/// beside it, and only when every one is complete are they renamed into
/// place; if one fails, none is left behind. Throws ConfigError as
/// write_output_file does.
void write_output_files(const std::vector<OutputFile>& outputs, const config::InputFiles& inputs);

/// Checks, before any work, what write_output_file would refuse at its end:
/// an input of the run (what `inputs` holds now: a command records the
/// files it is about to read first), the same path twice among `outputs`,
/// a directory that does not exist or cannot be written. Throws
/// ConfigError naming the flag.
void check_output_paths(const std::vector<std::pair<std::string, std::string>>& outputs,  // (flag, path)
                        const config::InputFiles& inputs);

/// Checks, before any work, that `dir` (given by `flag`) is a writable
/// directory or can be made: its nearest existing ancestor is one. Throws
/// ConfigError naming the flag.
void check_output_directory(const std::string& flag, const std::string& dir);

/// Makes `dir` and its parents; a failure is the user's path (ConfigError
/// naming the flag and the reason), not ptsim's.
void make_output_directory(const std::string& flag, const std::string& dir);

}  // namespace ptsim::cli

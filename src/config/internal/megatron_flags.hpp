// Every flag Megatron-LM's pretrain_gpt.py argument parser accepts, with
// how many values it takes: generated from Megatron-LM's source by
// scripts/megatron_flags.py (src/config/megatron_flag_table.cpp), so that
// a pasted launch line can be read token by token and a flag Megatron does
// not have refused.
#pragma once

#include <span>
#include <string_view>

namespace ptsim::config::internal {

enum class MegatronArity { None, One, Many, Optional };

struct MegatronFlag {
  std::string_view name;  // "--num-layers"
  MegatronArity arity;
};

/// Every flag Megatron-LM's pretrain_gpt.py parser accepts, sorted by name (byte order), each once.
std::span<const MegatronFlag> megatron_flags();

/// The Megatron-LM commit the table was generated from, e.g. "d98e8a64ddf34856e74b24714e3bedb2f5a39553 (2026-08-22)".
std::string_view megatron_flags_commit();

}  // namespace ptsim::config::internal

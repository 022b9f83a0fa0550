// The validated error band of each GPU (schema "ptsim-error-bands/1",
// validation/error_bands.json, written by scripts/error_bands.py from ptsim
// validate on the shipped run files; the same table is in docs/accuracy.md).
// Capacity reports state it beside every figure they show.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>
#include "ptsim/config/input_files.hpp"

namespace ptsim::config {

struct ErrorBand {
  std::int64_t runs = 0;              // published runs on this GPU
  double median_abs_error_pct = 0;    // median |predicted − measured| / measured
  double min_error_pct = 0;           // most negative signed error (ptsim too short)
  double max_error_pct = 0;           // most positive signed error
  std::int64_t runs_predicted_short = 0;
  std::vector<std::string> profiles;  // the hardware profiles the runs used
};

/// Bands by GPU name (a profile's gpu.name, e.g. "H100-SXM5-80GB"); throws
/// ConfigError naming the file and the key.
std::map<std::string, ErrorBand> load_error_bands(const std::string& path, InputFiles& inputs);

}  // namespace ptsim::config

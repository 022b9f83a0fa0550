// Measurement files (schema "ptsim-measurements/1") → MeasurementSet; and a
// calibrated profile written back as JSON beside the measurements it cites.
#pragma once

#include <string>

#include "ptsim/hardware/hardware_profile.hpp"
#include "ptsim/hardware/measurement_set.hpp"
#include "ptsim/config/input_files.hpp"

namespace ptsim::config {

/// Throws ConfigError naming the file, the kernel index and key, and the fix.
hardware::MeasurementSet load_measurements(const std::string& path, InputFiles& inputs);

/// The profile file at `profile_path` with `calibration` set (replacing any
/// earlier one), as JSON text.
std::string calibrated_profile_json(const std::string& profile_path, InputFiles& inputs,
                                    const hardware::Calibration& calibration);

}  // namespace ptsim::config

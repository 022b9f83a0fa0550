#!/usr/bin/env bash
# The measure → calibrate → check loop, for real, on this machine's CPU:
# ptsim-microbench-cpu measures OpenBLAS GEMMs and memory-bound kernels,
# ptsim calibrate fits hw_profiles/cpu-host.json to half of them, and
# ptsim check-kernels holds the result to the other half.
#   $1  output directory (default: build/cpu-calibration)
#   PTSIM_CPU_MAX_MEDIAN_ERROR  bound on the held-out median |error| in % (default 15)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PTSIM_BUILD_DIR:-$root/build}"
out="${1:-$build/cpu-calibration}"
mkdir -p "$out"
"$build/ptsim-microbench-cpu" --out "$out/cpu-measurements.json"
"$build/ptsim" calibrate --measurements "$out/cpu-measurements.json" \
  --hw "$root/hw_profiles/cpu-host.json" -o "$out/cpu-host-calibrated.json"
"$build/ptsim" check-kernels --measurements "$out/cpu-measurements.json" \
  --hw "$out/cpu-host-calibrated.json" --json "$out/cpu-check.json" \
  --max-median-error "${PTSIM_CPU_MAX_MEDIAN_ERROR:-15}"

#!/usr/bin/env bash
# Holds every calibrated profile in hw_profiles/ to the committed measurement
# file it was calibrated from (its "calibration.measurements"), on the kernels
# calibration held out: a drifting cost model fails here.
#   PTSIM_GPU_MAX_MEDIAN_ERROR  bound on the median |error| in % (default 15)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PTSIM_BUILD_DIR:-$root/build}"
checked=0
for profile in "$root"/hw_profiles/*.json; do
  measurements=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("calibration", {}).get("measurements", ""))' "$profile")
  [ -n "$measurements" ] || continue
  if [ ! -f "$root/$measurements" ]; then
    echo "$profile: calibrated from $measurements, which is not in the repository" >&2
    exit 1
  fi
  echo "== $(basename "$profile") against $measurements"
  "$build/ptsim" check-kernels --measurements "$root/$measurements" --hw "$profile" --include-unverified \
    --max-median-error "${PTSIM_GPU_MAX_MEDIAN_ERROR:-15}"
  checked=$((checked + 1))
done
echo "checked $checked calibrated profile(s)"

#!/usr/bin/env bash
# Holds every calibrated profile in hw_profiles/ to the committed measurement
# file it was calibrated from (its "calibration.measurements"), on the kernels
# calibration held out, and the published kernel tables listed below to the
# profiles of their GPUs: a drifting cost model fails here.
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

# Published kernel tables no profile is calibrated from: held against the
# profile of their GPU with the median |error| they reached when committed
# plus one point (docs/accuracy.md, "Kernel tables no profile is fitted to"),
# so that a cost model drifting away from them fails here.
held_out=0
while read -r table profile bound; do
  echo "== $profile against $table (held out)"
  "$build/ptsim" check-kernels --measurements "$root/$table" --hw "$root/hw_profiles/$profile.json" \
    --include-unverified --all --max-median-error "$bound"
  held_out=$((held_out + 1))
done <<'TABLES'
hw_profiles/measured/b200-torchao-mxfp8-moe-kernels.json b200-sxm-180gb 36.6
hw_profiles/measured/b300-te-gemm-profiling.json b300-sxm-288gb 5.9
TABLES
echo "checked $held_out held-out kernel table(s)"

#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds ptsim-microbench for that GPU from
# this tree alone (CMake and the CUDA toolkit; no Boost, fmt or JSON library),
# runs the whole sweep and writes the measurement file into DIR as
# <gpu>-<date>.json, with the build and run logs beside it. Under 6 minutes
# on an H100/H200 class GPU. With --sustained S it then times the training
# kernels of scripts/device/sustained_shapes.txt, each after S seconds back to
# back (the clocks of continuous load, not of a burst), into
# <gpu>-<date>-sustained.json (44 kernels: about 44·S seconds more). The SM
# clock, power, temperature and throttle reasons are logged every 0.5 s into
# clocks.csv throughout. --sustained-only skips the sweep: on a device lent
# for 10 minutes a command, run the sweep in one call and
# `--sustained 3 --sustained-only` (about 3 minutes on an H200) in another.
#   run_microbench.sh DIR [--quick] [--shapes FILE] [--sustained S [--sustained-only]]
# Back on an ordinary machine:
#   cp DIR/<gpu>-<date>.json hw_profiles/measured/
#   build/ptsim calibrate --measurements hw_profiles/measured/<gpu>-<date>.json \
#       --hw hw_profiles/<profile>.json -o hw_profiles/<profile>.json
#   build/ptsim check-kernels --measurements hw_profiles/measured/<gpu>-<date>.json \
#       --hw hw_profiles/<profile>.json
set -euo pipefail

out="${1:?usage: run_microbench.sh DIR [--quick] [--shapes FILE] [--sustained S]}"
shift
sweep_args=()
sustained=""
sustained_only=0
while (($#)); do
  case "$1" in
    --sustained) sustained="${2:?--sustained needs a number of seconds}"; shift 2 ;;
    --sustained-only) sustained_only=1; shift ;;
    *) sweep_args+=("$1"); shift ;;
  esac
done
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mkdir -p "$out"
build="$(mktemp -d /tmp/ptsim-microbench.XXXXXX)"
start=$(date +%s)

nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.sm,clocks.max.sm \
  --format=csv > "$out/nvidia-smi.csv" 2>&1 || true
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
slug=$(echo "$name" | tr '[:upper:]' '[:lower:]' | sed -e 's/nvidia //' -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/-$//')
echo "GPU: $name (sm_$cap) → $slug"

# Plain sm_XX code for the GPU at hand (WMMA and cuBLASLt need nothing newer).
cmake -S "$root/src/microbench" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="$cap" -DPTSIM_MICROBENCH_CPU=OFF > "$out/build.log" 2>&1
cmake --build "$build" -j "$(nproc)" >> "$out/build.log" 2>&1 || { tail -n 40 "$out/build.log"; exit 1; }
echo "built in $(( $(date +%s) - start )) s"

nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 500 > "$out/clocks.csv" 2>&1 &
clock_log=$!
trap 'kill $clock_log 2>/dev/null || true' EXIT

file="$out/$slug-$(date -u +%Y-%m-%d).json"
if [ "$sustained_only" = 1 ]; then
  [ -n "$sustained" ] || { echo "run_microbench.sh: --sustained-only needs --sustained S" >&2; exit 2; }
else
  "$build/ptsim-microbench" --out "$file" "${sweep_args[@]}" 2> "$out/microbench.log" || { tail -n 40 "$out/microbench.log"; exit 1; }
  echo "measured in $(( $(date +%s) - start )) s: $file"
fi
if [ -n "$sustained" ]; then
  sustained_file="$out/$slug-$(date -u +%Y-%m-%d)-sustained.json"
  "$build/ptsim-microbench" --shapes "$root/scripts/device/sustained_shapes.txt" --sustained "$sustained" \
    --out "$sustained_file" 2> "$out/microbench-sustained.log" || { tail -n 40 "$out/microbench-sustained.log"; exit 1; }
  echo "sustained kernels measured in $(( $(date +%s) - start )) s: $sustained_file"
fi
# A short table for the reply: op, kernels, failed verifications.
python3 - "$file" "${sustained_file:-}" <<'PY' || true
import json, os, sys, collections
for path in sys.argv[1:]:
    if not path or not os.path.exists(path):
        continue
    d = json.load(open(path))
    count, failed = collections.Counter(), collections.Counter()
    for k in d["kernels"]:
        key = k["op"] + ("/" + k["dtype"] if k["op"] == "gemm" else "")
        count[key] += 1
        failed[key] += not k["verified"]
    print(os.path.basename(path), d["device"])
    for key in sorted(count):
        print(f"{key:20s} {count[key]:4d} measured, {failed[key]} failed verification")
PY

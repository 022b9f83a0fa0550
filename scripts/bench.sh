#!/usr/bin/env bash
# End-to-end speed of ptsim: the runs of issue 8, each repeated, one table of
# medians — process wall time, the simulation's own wall time (what
# `simulation.wall_s` in --json reports: workload build + engine + summary),
# events, events per second of simulation wall time, and peak RSS.
#
#   scripts/bench.sh                 # all cases, 3 repeats (the searches once, the
#                                    # symmetric cases 21 times: --short-repeats)
#   scripts/bench.sh --repeats 5 --only gpt3
#   scripts/bench.sh --json bench.json
#   scripts/bench.sh --micro         # also the Google Benchmark hot-path suite
#   scripts/bench.sh --only symmetric --instructions  # + callgrind's count, which
#                                    # a busy host does not move (needs valgrind)
#   scripts/bench.sh --only none --scaling   # the cost-per-unit curve only
#
# Builds Release in $PTSIM_BUILD_DIR (default build) first. Run it on an idle
# machine: the figures are only as quiet as the cores.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${PTSIM_BUILD_DIR:-build}"

args=()
micro=0
for a in "$@"; do
  case "$a" in
    --micro) micro=1 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$a") ;;
  esac
done

if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build_dir" --target ptsim ptsim_bench >/dev/null

if [ "$micro" = 1 ]; then args+=(--micro-bench "$build_dir/bench/ptsim_bench"); fi
exec python3 scripts/bench_table.py --ptsim "$build_dir/ptsim" "${args[@]}"

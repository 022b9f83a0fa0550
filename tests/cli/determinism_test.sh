#!/usr/bin/env bash
# Same inputs, same output bytes: every command that writes something is run
# twice (the planner's at 1, 2 and 4 threads) and everything it writes —
# standard output, --json, --csv, --trace, report.json/.md/.html — must be
# byte-identical. Wall-clock times appear only with --timing.
#
#   tests/cli/determinism_test.sh PTSIM_BINARY
set -euo pipefail
ptsim="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$root"
model=configs/models/tiny.json
hw=hw_profiles/a100-sxm4-80gb.json

fail() { echo "determinism_test: FAIL: $*" >&2; exit 1; }
# same DIR_A DIR_B: every file of A equals B's (and both hold the same names).
same() {
  diff -rq "$1" "$2" >/dev/null || { diff -r "$1" "$2" | head -20 >&2; fail "$1 and $2 differ"; }
}
run() {  # run DIR COMMAND...: stdout to DIR/stdout; DIR is the working directory of outputs
  local dir="$1"; shift
  mkdir -p "$dir"
  "$@" >"$dir/stdout"
}

for i in 1 2; do
  d="$work/simulate-$i"
  run "$d" "$ptsim" simulate --model $model --hw $hw --gpus 16 --tp 2 --pp 2 --global-batch-size 16 \
    --json "$d/out.json" --trace "$d/trace.json"
  d="$work/symmetric-$i"
  run "$d" "$ptsim" simulate --model configs/models/gpt3-175b.json --hw hw_profiles/dgx-a100-superpod.json \
    --gpus 1024 --tp 8 --pp 8 --global-batch-size 1536 --mode symmetric --json "$d/out.json"
  d="$work/kernels-$i"
  run "$d" "$ptsim" kernels --model $model --hw $hw --gpus 8 --tp 2 --global-batch-size 8 --json "$d/out.json"
  d="$work/collective-$i"
  run "$d" "$ptsim" collective --hw hw_profiles/dgx-h100-superpod.json --op all_reduce,all_to_all \
    --ranks 8,64 --sizes 1M,1G --json "$d/out.json"
  d="$work/validate-$i"
  python3 - "$work/runs.json" <<'PY'
import json, sys
runs = json.load(open("validation/published_runs.json"))
runs["runs"] = runs["runs"][:2]
json.dump(runs, open(sys.argv[1], "w"))
PY
  run "$d" "$ptsim" validate --runs "$work/runs.json" --json "$d/out.json" --quiet
done
for what in simulate symmetric kernels collective validate; do same "$work/$what-1" "$work/$what-2"; done
grep -q "in [0-9.]* s" "$work/simulate-1/stdout" && fail "simulate prints a wall time without --timing"
"$ptsim" simulate --model $model --hw $hw --gpus 8 --global-batch-size 8 --timing --json "$work/timed.json" \
  | grep -q "events (.* tasks) in [0-9.]* s" || fail "--timing does not print the wall time"
grep -q '"wall_s"' "$work/timed.json" || fail "--timing does not write simulation.wall_s"

# The planner, its shards and merge, and the sweep and report built on it, at several thread counts.
for t in 1 2 4; do
  d="$work/plan-$t"
  run "$d" "$ptsim" plan --model $model --hw $hw --gpus 16 --global-batch-size 16 --top 5 --threads $t -q \
    --json "$d/out.json" --csv "$d/out.csv"
  d="$work/shards-$t"
  mkdir -p "$d"
  for s in 0 1; do
    "$ptsim" plan --model $model --hw $hw --gpus 16 --global-batch-size 16 --top 5 --threads $t -q \
      --shard $s/2 --json "$work/shard-$t-$s.json" >/dev/null
  done
  run "$d" "$ptsim" merge "$work/shard-$t-0.json" "$work/shard-$t-1.json" --json "$d/out.json"
  cat >"$work/sweep.json" <<JSON
{"model": "$root/$model", "global_batch_size": 16, "gpus": [8, 16],
 "hardware": [{"name": "A100", "profile": "$root/$hw"},
              {"name": "A100, NIC 2x", "profile": "$root/$hw", "overrides": {"/network/nic/bandwidth_GBps": 50}}]}
JSON
  d="$work/sweep-$t"
  run "$d" "$ptsim" sweep "$work/sweep.json" --threads $t -q --json "$d/out.json" --csv "$d/out.csv"
  d="$work/report-$t"
  run "$d" "$ptsim" report --model $model --hw $hw --tokens 1e9 --gpus 8,16 --threads $t -q --out "$d/report"
  sed -i "s#$d#DIR#g" "$d/stdout"
done
for what in plan shards sweep report; do
  same "$work/$what-1" "$work/$what-2"
  same "$work/$what-1" "$work/$what-4"
done
echo "determinism_test: every output byte-identical across reruns and at 1, 2 and 4 threads"

#!/usr/bin/env bash
# An interrupted run leaves the output it was writing as it was before the run
# (here: an older file) and no temporary beside it: ptsim writes a 400 MB trace,
# gets SIGINT while the temporary file grows, and must exit by the signal.
#
#   tests/cli/interrupt_test.sh PTSIM_BINARY
set -euo pipefail
ptsim="$1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "interrupt_test: FAIL: $*" >&2; exit 1; }

echo "an older trace" >"$work/trace.json"
"$ptsim" simulate --model "$root/configs/models/gpt3-175b.json" --hw "$root/hw_profiles/dgx-a100-superpod.json" \
  --gpus 64 --tp 8 --pp 8 --global-batch-size 96 --trace "$work/trace.json" --trace-ranks all >/dev/null &
pid=$!
for _ in $(seq 1 600); do  # up to 120 s for the simulation to reach the write
  if compgen -G "$work/trace.json.*.tmp" >/dev/null; then break; fi
  kill -0 "$pid" 2>/dev/null || fail "ptsim ended before it wrote the trace"
  sleep 0.2
done
compgen -G "$work/trace.json.*.tmp" >/dev/null || fail "no temporary file appeared"
kill -INT "$pid"
status=0
wait "$pid" || status=$?
[ "$status" -eq 130 ] || fail "exit status $status, expected 130 (SIGINT)"
[ "$(cat "$work/trace.json")" = "an older trace" ] || fail "the older output was changed"
if compgen -G "$work/trace.json.*" >/dev/null; then fail "a temporary was left: $(ls "$work")"; fi
echo "interrupt_test: interrupted while writing; the older output is intact and no temporary is left"

#!/usr/bin/env bash
# ptsim-plan-mpi end to end: on 2 and 3 MPI ranks its merged ranking must be
# the unsharded `ptsim plan` ranking (labels and step times, in order), and
# its refusals and failures must give ptsim's exit codes without hanging.
# Usage: plan_mpi_test.sh MPIEXEC NUMPROC_FLAG PTSIM_PLAN_MPI PTSIM SOURCE_DIR
set -euo pipefail

mpiexec="$1" np_flag="$2" plan_mpi="$3" ptsim="$4" src="$5"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Containers run as root, which Open MPI refuses (even for --version) unless told.
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
mpi_flags=()
if "$mpiexec" --version 2>&1 | grep -Eqi "open ?mpi|open-mpi|openrte"; then
  mpi_flags+=(--oversubscribe)  # more ranks than this machine's cores
  if [ "$(id -u)" -eq 0 ]; then mpi_flags+=(--allow-run-as-root); fi
fi
# Under AddressSanitizer, LeakSanitizer reports Open MPI's own allocations at exit
# (its components are dlopen'ed and unloaded by MPI_Finalize, so they cannot even be
# named in a suppression file). ptsim's code that the ranks run, run_plan, is
# leak-checked by the rest of the suite; here only the leak check is turned off.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
run_mpi() {  # run_mpi N ARGS...: ptsim-plan-mpi on N ranks, each with one thread
  local n="$1"
  shift
  timeout 60 "$mpiexec" "$np_flag" "$n" "${mpi_flags[@]}" "$plan_mpi" "$@" --threads 1
}

# 512 strategies, of which at least 5 fit: a search of a few hundredths of a second.
search=(--model "$src/configs/models/tiny.json" --hw "$src/hw_profiles/a100-sxm4-80gb.json"
        --gpus 8 --global-batch-size 16 --top 5)

"$ptsim" plan "${search[@]}" --threads 1 --quiet --json "$work/out.json" > "$work/table.txt"
for n in 2 3; do
  run_mpi "$n" "${search[@]}" --json "$work/out-mpi-$n.json" --csv "$work/out-mpi-$n.csv" > "$work/table-mpi-$n.txt"
  python3 - "$work/out.json" "$work/out-mpi-$n.json" "$work/table.txt" "$work/table-mpi-$n.txt" "$work/out-mpi-$n.csv" "$n" <<'PY'
import json, sys
plain_file, mpi_file, plain_table, mpi_table, mpi_csv, n = sys.argv[1:]
plain, mpi = json.load(open(plain_file)), json.load(open(mpi_file))
def fail(message):
    sys.exit(f"ptsim-plan-mpi on {n} ranks: {message}")
ranking = lambda plan: [(c["label"], c["step_time_s"]) for c in plan["candidates"]]
if len(plain["candidates"]) < 3:
    fail(f"the test search should rank at least 3 candidates, ptsim plan ranked {len(plain['candidates'])}")
if ranking(mpi) != ranking(plain):
    fail("ranking differs from ptsim plan's:\n  mpi:   " + "\n         ".join(map(str, ranking(mpi))) +
         "\n  plain: " + "\n         ".join(map(str, ranking(plain))))
for key in ("searched", "invalid", "top"):
    if mpi[key] != plain[key]:
        fail(f"{key} = {mpi[key]}, ptsim plan's {plain[key]}")
if mpi["shard"] != {"index": 0, "count": 1}:
    fail(f"the merged shard is {mpi['shard']}, not 0/1")
# The table's rows (not its first line, which holds the wall time and the pruning counts).
rows = lambda f: open(f).read().splitlines()[1:]
if rows(mpi_table) != rows(plain_table):
    fail("printed table differs from ptsim plan's:\n" + open(mpi_table).read() + "\n" + open(plain_table).read())
if len(open(mpi_csv).read().splitlines()) != 1 + len(plain["candidates"]):
    fail("the CSV does not hold a header and one row per candidate")
print(f"ptsim-plan-mpi on {n} ranks: {len(mpi['candidates'])} candidates as ptsim plan ranks them, "
      f"best {mpi['candidates'][0]['label']} at {mpi['candidates'][0]['step_time_s']:.6g} s")
PY
done

expect_exit() {  # expect_exit CODE MESSAGE ARGS...: ptsim-plan-mpi on 2 ranks exits with CODE and prints MESSAGE
  local want="$1" message="$2"
  shift 2
  local rc=0
  run_mpi 2 "$@" > "$work/stdout.txt" 2> "$work/stderr.txt" || rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -qF -- "$message" "$work/stderr.txt"; then
    echo "ptsim-plan-mpi $*: exit $rc (want $want), stderr:" >&2
    cat "$work/stderr.txt" >&2
    exit 1
  fi
  echo "ptsim-plan-mpi exits $rc: $(grep -F -m1 -- "$message" "$work/stderr.txt")"
}
# Refused before any search, by rank 0 for all.
expect_exit 2 "--shard is not allowed" "${search[@]}" --shard 0/2
# Flags are exact (no prefix guessing): an abbreviation is refused with the real name.
expect_exit 2 "unrecognised option '--js' (did you mean --json?)" "${search[@]}" --js "$work/x.json"
# Every rank fails in its search and aborts the job.
expect_exit 2 "no-such-model.json" --model "$work/no-such-model.json" --hw "$src/hw_profiles/a100-sxm4-80gb.json" \
  --gpus 8 --global-batch-size 16
# No strategy fits on any rank: the merged search's exit code.
expect_exit 3 "no strategy fits" --model "$src/configs/models/gpt3-175b.json" --hw "$src/hw_profiles/a100-sxm4-80gb.json" \
  --gpus 8 --global-batch-size 8

"""What the readings (scripts/*_reading.py) share: their flags, running ptsim over the rows, the summary line and the bound.

A reading sets ptsim against measured runs kept outside the validation files and, with
--max-median-error, is a drift guard in the test suite (tests/CMakeLists.txt). Readings whose
rows are transcribed with the ptsim flags that express them (torchtitan's, Megatron-Bridge's)
share the whole of their work here: run_transcribed_reading.
"""
import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile


def add_common_arguments(ap, root, median_of):
    """--ptsim, --jobs and --max-median-error; `median_of` names the rows the bound reads."""
    ap.add_argument("--ptsim", default=os.path.join(root, "build", "ptsim"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--max-median-error", type=float, metavar="PCT",
                    help=f"exit 4 when the median |error| of {median_of} exceeds PCT (a drift guard)")


def require_ptsim(path):
    if not os.path.exists(path):
        sys.exit(f"{path}: no ptsim binary; build it first (scripts/setup.sh)")


def summary(label, errors):
    """One line: rows, median |error|, signed median, worst, rows within 10%."""
    return (f"{label}: {len(errors)} rows, median |error| {statistics.median(abs(e) for e in errors):.1f}%, "
            f"signed median {statistics.median(errors):+.1f}%, worst {max(errors, key=abs):+.1f}%, "
            f"within 10%: {sum(abs(e) <= 10 for e in errors)}")


def simulated_step_s(cmd, out_path, what):
    """Runs `ptsim simulate` (cmd, which writes its JSON report to out_path) and returns its step
    time in seconds; a failure stops the reading, naming `what` it was simulating."""
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"ptsim failed on {what} (exit {done.returncode}): {done.stderr.strip()}\n  {' '.join(cmd)}")
    with open(out_path) as f:
        return json.load(f)["step_time_s"]


def simulate_all(rows, simulate_row, jobs):
    """simulate_row(index, row, scratch_dir) for every row, `jobs` at a time, in the rows' order."""
    with tempfile.TemporaryDirectory() as scratch, concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(lambda ir: simulate_row(ir[0], ir[1], scratch), enumerate(rows)))


def enforce_median_bound(errors, bound, what, script):
    """With --max-median-error set (`bound`), exit 4 when the median |error| of `errors` exceeds it."""
    if bound is None:
        return
    median = statistics.median(abs(e) for e in errors)
    if median > bound:
        print(f"{script}: {what} median |error| {median:.2f}% exceeds --max-median-error {bound:g}%", file=sys.stderr)
        sys.exit(4)


# A transcribed row: the published throughput, the run's GPUs, sequence and batch, and the flags.
TRANSCRIBED_FIELDS = ("id", "source", "model", "hw", "gpus", "seq_length", "global_batch_size",
                      "tokens_per_s_per_gpu", "args")


def load_transcribed_rows(path, schema):
    """The rows of a transcribed file of `schema`, each checked for the fields the readings read."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"{path}: {e}")
    if doc.get("schema") != schema:
        sys.exit(f"{path}: schema {doc.get('schema')!r}, expected {schema!r}")
    rows = doc.get("runs")
    if not isinstance(rows, list) or not rows:
        sys.exit(f"{path}: 'runs' must be a non-empty list")
    for i, row in enumerate(rows):
        missing = [k for k in TRANSCRIBED_FIELDS if k not in row]
        if missing:
            sys.exit(f"{path}: runs[{i}] ({row.get('id', '?')}): missing {', '.join(missing)}")
        for k in ("gpus", "seq_length", "global_batch_size", "tokens_per_s_per_gpu"):
            if not isinstance(row[k], (int, float)) or row[k] <= 0:
                sys.exit(f"{path}: runs[{i}] ({row['id']}): '{k}' is {row[k]!r}, expected a positive number")
        if not isinstance(row["args"], list) or not all(isinstance(a, str) for a in row["args"]):
            sys.exit(f"{path}: runs[{i}] ({row['id']}): 'args' must be a list of strings")
    return rows


def transcribed_measured_s(row):
    """The published step: global batch x sequence length / (tokens/s per GPU x GPUs)."""
    return row["global_batch_size"] * row["seq_length"] / (row["tokens_per_s_per_gpu"] * row["gpus"])


def run_transcribed_reading(description, root, runs, schema, stack, script, group_of):
    """The whole of a transcribed reading: its command line, every row simulated under `stack`
    with the row's flags, a line per group (group_of(row)) and one over all rows, and the bound.
    Returns the exit status."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--runs", default=runs, help="the transcribed rows (default: %(default)s)")
    ap.add_argument("--hw-dir", default=os.path.join(root, "hw_profiles"),
                    help="where the rows' profiles are read from (default: the shipped ones)")
    ap.add_argument("--rows", action="store_true", help="print every row")
    add_common_arguments(ap, root, "all rows")
    args = ap.parse_args()
    require_ptsim(args.ptsim)
    rows = load_transcribed_rows(args.runs, schema)

    def simulate(row, scratch):
        out_path = os.path.join(scratch, row["id"] + ".json")
        cmd = [args.ptsim, "simulate", "--model", os.path.join(root, row["model"]),
               "--hw", os.path.join(args.hw_dir, row["hw"] + ".json"), "--stack", stack, "--gpus", str(row["gpus"]),
               "--seq-length", str(row["seq_length"]), "--global-batch-size", str(row["global_batch_size"]),
               "--json", out_path] + row["args"]
        return simulated_step_s(cmd, out_path, row["id"])

    predicted = simulate_all(rows, lambda _, row, scratch: simulate(row, scratch), args.jobs)
    errors = [100 * (p / transcribed_measured_s(r) - 1) for p, r in zip(predicted, rows)]
    if args.rows:
        width = max(len(r["id"]) for r in rows)
        for r, p, e in zip(rows, predicted, errors):
            print(f"{r['id']:{width}} measured {transcribed_measured_s(r):8.3f} s predicted {p:8.3f} s {e:+6.1f}%")
    for group in dict.fromkeys(group_of(r) for r in rows):
        print(summary(group, [e for e, r in zip(errors, rows) if group_of(r) == group]))
    print(summary("all", errors))
    enforce_median_bound(errors, args.max_median_error, "all rows'", script)
    return 0


def run_megatron_core_reading_by_gpu(doc, runs_relative, script):
    """A transcribed reading of Megatron-Core runs (the rows file `runs_relative`, from the repository root, in
    the schema ptsim-megatron-bridge-readings/1) under configs/stacks/megatron-core.json, grouped by the GPU
    profile each row runs on. `doc`: the script's docstring, whose first paragraph describes it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    stack = os.path.join(root, "configs", "stacks", "megatron-core.json")
    return run_transcribed_reading(doc.split("\n\n")[0], root, os.path.join(root, runs_relative),
                                   "ptsim-megatron-bridge-readings/1", stack, script, lambda row: row["hw"])

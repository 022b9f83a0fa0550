#!/usr/bin/env python3
"""ptsim against the measured throughputs of PyTorch-native training (a reading, not a bound).

torchtitan's published benchmarks (benchmarks/*.md in pytorch/torchtitan: the
December 2024 Llama 3.1 8B/70B/405B tables on Meta's 500 W H100s, the June
2025 asynchronous-TP tables, Trainy's June 2025 H200 runs) and torchao's
float8 training benchmark (run with torchtitan) are transcribed, with the
ptsim flags that express each run, in validation/torchtitan/benchmarks.json.
This script simulates every row under configs/stacks/torchtitan-2024-12.json,
sets the step against the published one (global batch x sequence length over
tokens/s per GPU x GPUs) and prints the median |error|, the signed median and
the worst, per source and over all rows: the figures issue 29's bar is stated
in. Nothing here is fitted: the rows check, they never calibrate.

With --max-median-error it exits 4 when the median |error| of all rows
exceeds the bound (a drift guard).

  scripts/torchtitan_reading.py
  scripts/torchtitan_reading.py --rows
  scripts/torchtitan_reading.py --hw-dir /tmp/old-profiles --rows   # other profiles
  scripts/torchtitan_reading.py --max-median-error 6.5
"""
import argparse
import json
import os
import sys

from reading_common import add_common_arguments, enforce_median_bound, require_ptsim, simulate_all, simulated_step_s, summary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = os.path.join(ROOT, "validation", "torchtitan", "benchmarks.json")
STACK = os.path.join(ROOT, "configs", "stacks", "torchtitan-2024-12.json")
FIELDS = ("id", "source", "model", "hw", "gpus", "seq_length", "global_batch_size", "tokens_per_s_per_gpu", "args")


def load_rows(path):
    """The rows of the file, each checked for the fields this script reads."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"{path}: {e}")
    if doc.get("schema") != "ptsim-torchtitan-readings/1":
        sys.exit(f"{path}: schema {doc.get('schema')!r}, expected 'ptsim-torchtitan-readings/1'")
    rows = doc.get("runs")
    if not isinstance(rows, list) or not rows:
        sys.exit(f"{path}: 'runs' must be a non-empty list")
    for i, row in enumerate(rows):
        missing = [k for k in FIELDS if k not in row]
        if missing:
            sys.exit(f"{path}: runs[{i}] ({row.get('id', '?')}): missing {', '.join(missing)}")
        for k in ("gpus", "seq_length", "global_batch_size", "tokens_per_s_per_gpu"):
            if not isinstance(row[k], (int, float)) or row[k] <= 0:
                sys.exit(f"{path}: runs[{i}] ({row['id']}): '{k}' is {row[k]!r}, expected a positive number")
    return rows


def measured_s(row):
    return row["global_batch_size"] * row["seq_length"] / (row["tokens_per_s_per_gpu"] * row["gpus"])


def simulate(ptsim, hw_dir, row, scratch):
    out_path = os.path.join(scratch, row["id"] + ".json")
    cmd = [ptsim, "simulate", "--model", os.path.join(ROOT, row["model"]),
           "--hw", os.path.join(hw_dir, row["hw"] + ".json"), "--stack", STACK, "--gpus", str(row["gpus"]),
           "--seq-length", str(row["seq_length"]), "--global-batch-size", str(row["global_batch_size"]),
           "--json", out_path] + row["args"]
    return simulated_step_s(cmd, out_path, row["id"])


def source_of(row):
    """The benchmark a row comes from: the part of its source before the first comma."""
    return row["source"].split(",")[0].split(" (")[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default=RUNS, help="the transcribed rows (default: %(default)s)")
    ap.add_argument("--hw-dir", default=os.path.join(ROOT, "hw_profiles"),
                    help="where the rows' profiles are read from (default: the shipped ones)")
    ap.add_argument("--rows", action="store_true", help="print every row")
    add_common_arguments(ap, ROOT, "all rows")
    args = ap.parse_args()
    require_ptsim(args.ptsim)
    rows = load_rows(args.runs)
    predicted = simulate_all(rows, lambda _, r, scratch: simulate(args.ptsim, args.hw_dir, r, scratch), args.jobs)
    errors = [100 * (p / measured_s(r) - 1) for p, r in zip(predicted, rows)]
    if args.rows:
        for r, p, e in zip(rows, predicted, errors):
            print(f"{r['id']:38} measured {measured_s(r):8.3f} s predicted {p:8.3f} s {e:+6.1f}%")
    for source in dict.fromkeys(source_of(r) for r in rows):
        print(summary(source, [e for e, r in zip(errors, rows) if source_of(r) == source]))
    print(summary("all", errors))
    enforce_median_bound(errors, args.max_median_error, "all rows'", "torchtitan_reading")
    return 0


if __name__ == "__main__":
    sys.exit(main())

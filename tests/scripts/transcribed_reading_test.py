#!/usr/bin/env python3
"""The transcribed readings (megatron_bridge_reading.py, torchtitan_reading.py, through
reading_common.run_transcribed_reading) report each row's error as ptsim simulate gives it
with the row's flags under the reading's stack, computed here independently; they refuse a
malformed file by name and exit 4 past --max-median-error."""
import json
import os
import re
import subprocess
import sys
import tempfile

script, ptsim, root = sys.argv[1], sys.argv[2], sys.argv[3]
STACK = os.path.join(root, "configs", "stacks", "megatron-core.json")
SCHEMA = "ptsim-megatron-bridge-readings/1"
# Two rows of the tiny model with round, made-up throughputs: the check is the arithmetic.
ROWS = [
    {"id": "a", "source": "test", "model": "configs/models/tiny.json", "hw": "h100-sxm5-80gb", "gpus": 8,
     "seq_length": 1024, "global_batch_size": 64, "tokens_per_s_per_gpu": 100000.0,
     "args": ["--tp", "2", "--micro-batch-size", "2", "--use-distributed-optimizer"]},
    {"id": "b", "source": "test", "model": "configs/models/tiny.json", "hw": "a100-sxm4-80gb", "gpus": 4,
     "seq_length": 2048, "global_batch_size": 16, "tokens_per_s_per_gpu": 50000.0,
     "args": ["--pp", "2", "--micro-batch-size", "1", "--recompute", "full"]},
]


def direct_error(row, scratch):
    out = os.path.join(scratch, "direct.json")
    cmd = [ptsim, "simulate", "--model", os.path.join(root, row["model"]),
           "--hw", os.path.join(root, "hw_profiles", row["hw"] + ".json"), "--stack", STACK,
           "--gpus", str(row["gpus"]), "--seq-length", str(row["seq_length"]),
           "--global-batch-size", str(row["global_batch_size"]), "--json", out] + row["args"]
    subprocess.run(cmd, check=True, capture_output=True)
    with open(out) as f:
        predicted = json.load(f)["step_time_s"]
    measured = row["global_batch_size"] * row["seq_length"] / (row["tokens_per_s_per_gpu"] * row["gpus"])
    return 100 * (predicted / measured - 1)


def reading(path, *extra):
    return subprocess.run([sys.executable, script, "--runs", path, "--ptsim", ptsim, "--jobs", "1", *extra],
                          capture_output=True, text=True)


failures = []
with tempfile.TemporaryDirectory() as scratch:
    path = os.path.join(scratch, "rows.json")
    with open(path, "w") as f:
        json.dump({"schema": SCHEMA, "runs": ROWS}, f)
    done = reading(path, "--rows")
    if done.returncode != 0:
        failures.append(f"reading failed: {done.stderr}")
    else:
        expect = [direct_error(r, scratch) for r in ROWS]
        for row, e in zip(ROWS, expect):
            m = re.search(rf"^{row['id']} +measured .* ([+-][0-9.]+)%$", done.stdout, re.M)
            if not m or abs(float(m.group(1)) - e) > 0.051:
                failures.append(f"row {row['id']}: expected {e:+.1f}%, got: {done.stdout}")
        median = (abs(expect[0]) + abs(expect[1])) / 2
        m = re.search(r"^all: 2 rows, median \|error\| ([0-9.]+)%", done.stdout, re.M)
        if not m or abs(float(m.group(1)) - median) > 0.051:
            failures.append(f"expected median |error| {median:.1f}%, got: {done.stdout}")
        over = reading(path, "--max-median-error", f"{median * 0.9:.3f}")
        if over.returncode != 4 or "exceeds --max-median-error" not in over.stderr:
            failures.append(f"a bound under the median: expected exit 4, got {over.returncode}: {over.stderr}")
        under = reading(path, "--max-median-error", f"{median * 1.1 + 0.1:.3f}")
        if under.returncode != 0:
            failures.append(f"a bound over the median: expected exit 0, got {under.returncode}: {under.stderr}")
    bad = [({"schema": "ptsim-torchtitan-readings/1", "runs": ROWS}, f"expected '{SCHEMA}'"),
           ({"schema": SCHEMA, "runs": []}, "'runs' must be a non-empty list"),
           ({"schema": SCHEMA, "runs": [{k: v for k, v in ROWS[0].items() if k != "hw"}]}, "runs[0] (a): missing hw"),
           ({"schema": SCHEMA, "runs": [dict(ROWS[0], gpus=0)]}, "'gpus' is 0, expected a positive number"),
           ({"schema": SCHEMA, "runs": [dict(ROWS[0], args="--tp 2")]}, "'args' must be a list of strings")]
    for doc, message in bad:
        with open(path, "w") as f:
            json.dump(doc, f)
        done = reading(path)
        if done.returncode == 0 or message not in done.stderr:
            failures.append(f"{message!r}: expected a refusal naming it, got {done.returncode}: {done.stderr}")

for f in failures:
    print(f, file=sys.stderr)
sys.exit(1 if failures else 0)

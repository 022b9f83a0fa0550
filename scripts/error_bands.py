#!/usr/bin/env python3
"""The validated error band of each GPU: how far ptsim's step times were from
the published runs on that GPU (validation/published_runs.json and
validation/heldout_runs.json), as `ptsim validate` computes them today.

`ptsim report` states the band of each GPU it shows on every page (report.md,
report.html), read from validation/error_bands.json, which this script writes;
docs/accuracy.md carries the same table ("Error band per GPU"), which
--markdown prints. With --check it recomputes both and fails when the file or
the table in docs/accuracy.md is not what ptsim gives now (a cost model that
moved without its band), naming the command that regenerates them.

Usage:
  scripts/error_bands.py --ptsim build/ptsim            # rewrite validation/error_bands.json
  scripts/error_bands.py --ptsim build/ptsim --check    # exit 1 when either has drifted
  scripts/error_bands.py --ptsim build/ptsim --markdown # the table for docs/accuracy.md
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_FILES = ["validation/published_runs.json", "validation/heldout_runs.json"]
BANDS = "validation/error_bands.json"
ACCURACY = "docs/accuracy.md"
SCHEMA = "ptsim-error-bands/1"
TOLERANCE_PCT = 0.05  # rounding of the written figures


def fail(message):
    print(f"error_bands.py: {message}", file=sys.stderr)
    sys.exit(2)


def validated_errors(ptsim, runs_file):
    """(run id, signed error %) for every run of runs_file, from ptsim validate --json."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "validate.json")
        done = subprocess.run([ptsim, "validate", "--runs", os.path.join(ROOT, runs_file), "--json", out, "--quiet"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode not in (0, 4) or not os.path.exists(out):
            fail(f"ptsim validate --runs {runs_file} failed ({done.returncode}): {done.stderr.strip()}")
        with open(out) as f:
            rows = json.load(f)["runs"]
    return {r["id"]: r["error_pct"] for r in rows if r.get("error_pct") is not None}


def gpu_of(profile, cache):
    if profile not in cache:
        path = os.path.join(ROOT, "hw_profiles", profile + ".json")
        with open(path) as f:
            cache[profile] = json.load(f)["gpu"]["name"]
    return cache[profile]


def compute(ptsim):
    profiles = {}
    by_gpu = {}
    for runs_file in RUN_FILES:
        with open(os.path.join(ROOT, runs_file)) as f:
            runs = json.load(f)["runs"]
        errors = validated_errors(ptsim, runs_file)
        for run in runs:
            if run["id"] not in errors:
                continue
            gpu = gpu_of(run["hardware"], profiles)
            entry = by_gpu.setdefault(gpu, {"errors": [], "profiles": set(), "files": set()})
            entry["errors"].append(errors[run["id"]])
            entry["profiles"].add(run["hardware"])
            entry["files"].add(runs_file)
    bands = {}
    for gpu in sorted(by_gpu):
        e = by_gpu[gpu]["errors"]
        bands[gpu] = {
            "runs": len(e),
            "median_abs_error_pct": round(statistics.median(abs(x) for x in e), 1),
            "min_error_pct": round(min(e), 1),
            "max_error_pct": round(max(e), 1),
            "runs_predicted_short": sum(1 for x in e if x < 0),
            "profiles": sorted(by_gpu[gpu]["profiles"]),
            "run_files": sorted(by_gpu[gpu]["files"]),
        }
    return {
        "schema": SCHEMA,
        "note": "Written by scripts/error_bands.py from ptsim validate on the run files; the same table is in "
                "docs/accuracy.md (Error band per GPU). Error: predicted against measured step time, negative "
                "when ptsim is too short.",
        "gpus": bands,
    }


def markdown(bands):
    lines = ["| GPU | runs | median \\|error\\| | signed range | predicted short | profiles |",
             "|---|---:|---:|---|---:|---|"]
    for gpu, b in bands["gpus"].items():
        lines.append(f"| {gpu} | {b['runs']} | {b['median_abs_error_pct']:.1f}% | "
                     f"{b['min_error_pct']:+.1f}% … {b['max_error_pct']:+.1f}% | "
                     f"{b['runs_predicted_short']} of {b['runs']} | {', '.join(b['profiles'])} |")
    return "\n".join(lines)


def same(a, b):
    if a.keys() != b.keys():
        return False
    for gpu in a:
        x, y = a[gpu], b[gpu]
        if x.keys() != y.keys():
            return False
        for k in x:
            if isinstance(x[k], float):
                if abs(x[k] - y[k]) > TOLERANCE_PCT:
                    return False
            elif x[k] != y[k]:
                return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptsim", required=True, help="the ptsim binary")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="fail when the file or docs/accuracy.md has drifted")
    mode.add_argument("--markdown", action="store_true", help="print the docs/accuracy.md table")
    args = ap.parse_args()
    if not os.access(args.ptsim, os.X_OK):
        fail(f"--ptsim {args.ptsim} is not an executable")
    bands = compute(args.ptsim)
    regenerate = f"scripts/error_bands.py --ptsim {args.ptsim}, then paste --markdown into {ACCURACY}"
    if args.markdown:
        print(markdown(bands))
        return 0
    if args.check:
        with open(os.path.join(ROOT, BANDS)) as f:
            shipped = json.load(f)
        if shipped.get("schema") != SCHEMA or not same(shipped.get("gpus", {}), bands["gpus"]):
            print(f"error_bands.py: {BANDS} is not what ptsim validate gives now:\n"
                  f"  shipped: {json.dumps(shipped.get('gpus'), sort_keys=True)}\n"
                  f"  now:     {json.dumps(bands['gpus'], sort_keys=True)}\n"
                  f"regenerate with {regenerate}", file=sys.stderr)
            return 1
        with open(os.path.join(ROOT, ACCURACY)) as f:
            if markdown(bands) not in f.read():
                print(f"error_bands.py: {ACCURACY} does not carry this table (Error band per GPU):\n"
                      f"{markdown(bands)}\nregenerate with {regenerate}", file=sys.stderr)
                return 1
        print(f"error_bands.py: {BANDS} and {ACCURACY} agree with ptsim validate "
              f"({sum(b['runs'] for b in bands['gpus'].values())} runs on {len(bands['gpus'])} GPUs)")
        return 0
    path = os.path.join(ROOT, BANDS)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(bands, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
    print(f"wrote {BANDS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

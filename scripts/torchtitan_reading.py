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
import os
import sys

from reading_common import run_transcribed_reading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = os.path.join(ROOT, "validation", "torchtitan", "benchmarks.json")
STACK = os.path.join(ROOT, "configs", "stacks", "torchtitan-2024-12.json")


def source_of(row):
    """The benchmark a row comes from: the part of its source before the first comma."""
    return row["source"].split(",")[0].split(" (")[0]


if __name__ == "__main__":
    sys.exit(run_transcribed_reading(__doc__.split("\n\n")[0], ROOT, RUNS, "ptsim-torchtitan-readings/1", STACK,
                                     "torchtitan_reading", source_of))

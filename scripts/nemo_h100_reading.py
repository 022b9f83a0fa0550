#!/usr/bin/env python3
"""ptsim against NeMo 24.07's measured FP8 pre-training throughputs on DGX-H100 (a reading, not a bound).

NeMo's performance summary for its 24.07 container (NVIDIA/NeMo
docs/source/performance/performance_summary.md at tag v2.0.0) publishes the
FP8 pre-training throughput of GPT-3, Llama 2, Llama 3 and Nemotron models on
8 to 512 H100s with their layout. Its twelve rows are transcribed in
validation/nemo/h100-24.07.json with the ptsim flags that express them: the
table's layout, and what it leaves out read from NeMo-Framework-Launcher at
tag 24.07 (its training configurations and H100 FP8 example scripts). This script
simulates every row under configs/stacks/megatron-core.json and prints the
median |error|, the signed median and the worst. Nothing here is fitted: the
rows check, they never calibrate.

With --max-median-error it exits 4 when the median |error| of all rows
exceeds the bound (a drift guard).

  scripts/nemo_h100_reading.py
  scripts/nemo_h100_reading.py --rows
"""
import sys

from reading_common import run_megatron_core_reading_by_gpu

if __name__ == "__main__":
    sys.exit(run_megatron_core_reading_by_gpu(__doc__, "validation/nemo/h100-24.07.json", "nemo_h100_reading"))

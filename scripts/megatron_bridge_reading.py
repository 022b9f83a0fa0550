#!/usr/bin/env python3
"""ptsim against Megatron-Bridge's measured mixture-of-experts pre-training throughputs (a reading, not a bound).

Megatron-Bridge's performance summary (NVIDIA-NeMo/Megatron-Bridge
docs/performance-summary.md at 067f987df, the 26.08 NeMo container) publishes
the throughput of every MoE model it benchmarks on GB300 and GB200 NVL72 racks:
DeepSeek-V3, DeepSeek-V4-Flash, gpt-oss-120b, Qwen3-30B-A3B and 235B-A22B,
Nemotron 3 Nano, Super and Ultra, Nemotron 3.5 Lightning. The 18 rows are
transcribed in validation/megatron-bridge/moe-26.08.json, each with the ptsim
flags that express its performance recipe at that commit (layout, recomputation,
MXFP8 or NVFP4 and the modules kept in bf16, HybridEP's dispatcher, the
EP-communication overlap, the optimizer's sharding, activation offload). This
script simulates every row under configs/stacks/megatron-core.json, sets the
step against the published one (global batch x sequence length over tokens/s
per GPU x GPUs) and prints the median |error|, the signed median and the worst
per model and over all rows: the figures issue 28's bar is stated in. Nothing
here is fitted: the rows check, they never calibrate.

With --max-median-error it exits 4 when the median |error| of all rows
exceeds the bound (a drift guard).

  scripts/megatron_bridge_reading.py
  scripts/megatron_bridge_reading.py --rows
  scripts/megatron_bridge_reading.py --hw-dir /tmp/other-profiles --rows   # other profiles
"""
import os
import sys

from reading_common import run_transcribed_reading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = os.path.join(ROOT, "validation", "megatron-bridge", "moe-26.08.json")
STACK = os.path.join(ROOT, "configs", "stacks", "megatron-core.json")


def model_of(row):
    """The model a row runs: its model file's stem."""
    return os.path.splitext(os.path.basename(row["model"]))[0]


if __name__ == "__main__":
    sys.exit(run_transcribed_reading(__doc__.split("\n\n")[0], ROOT, RUNS, "ptsim-megatron-bridge-readings/1", STACK,
                                     "megatron_bridge_reading", model_of))

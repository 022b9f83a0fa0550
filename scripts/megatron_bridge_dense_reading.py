#!/usr/bin/env python3
"""ptsim against Megatron-Bridge's measured dense pre-training throughputs across GPUs (a reading, not a bound).

Megatron-Bridge's performance summaries (NVIDIA-NeMo/Megatron-Bridge
docs/performance-summary-archive.md at 067f987df) publish the throughput of
the same software on several GPUs: the 25.11 NeMo container's Llama 3 8B on
one node of GB300, GB200 and B200 at the same layout (FP8 current scaling and
MXFP8) and of H100 under Megatron-FSDP, and the 26.06 container's Llama 3.1
405B pre-training on 256 GB300 and GB200 GPUs (FP8, MXFP8, NVFP4) and 1,024
H100s. The rows are transcribed in validation/megatron-bridge/dense.json,
each with the ptsim flags that express its recipe. This script simulates
every row under configs/stacks/megatron-core.json, sets the step against the
published one (global batch x sequence length over tokens/s per GPU x GPUs)
and prints the median |error|, the signed median and the worst per GPU and
over all rows: the same GPU-to-GPU comparison the table makes. Nothing here
is fitted: the rows check, they never calibrate.

With --max-median-error it exits 4 when the median |error| of all rows
exceeds the bound (a drift guard).

  scripts/megatron_bridge_dense_reading.py
  scripts/megatron_bridge_dense_reading.py --rows
"""
import sys

from reading_common import run_megatron_core_reading_by_gpu

if __name__ == "__main__":
    sys.exit(run_megatron_core_reading_by_gpu(__doc__, "validation/megatron-bridge/dense.json", "megatron_bridge_dense_reading"))

#!/usr/bin/env python3
"""vtrain_reading.py reads both of vTrain's CSV layouts and reports the error of
each run as ptsim simulate gives it, run by run, computed here independently."""
import json
import os
import re
import subprocess
import sys
import tempfile

script, ptsim, root = sys.argv[1], sys.argv[2], sys.argv[3]
# Two rows copied from vTrain's data/ground_truth_single.csv (VIA-Research/vTrain f8dda84) and one
# from ground_truth_multi.csv; the measured times are changed to round numbers for the check.
SINGLE = """\ufeff# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)
2,16,8,1024,16,24,1024,1,1,2,400.0
8,8,1,1024,16,20,1024,8,1,1,800.0
"""
MULTI = """\ufeffParameters (billion),# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)
3.6,64,512,8,3072,32,30,2048,1,64,1,3566.5
"""


def ptsim_ms(gpus, gbs, mbs, h, a, l, s, tp, pp, host, scratch):
    model = os.path.join(scratch, "m.json")
    with open(model, "w") as f:
        json.dump({"name": "m", "num_layers": l, "hidden_size": h, "num_attention_heads": a, "ffn_hidden_size": 4 * h,
                   "vocab_size": 50257, "seq_length": s, "activation": "gelu", "normalization": "layernorm"}, f)
    out = os.path.join(scratch, "o.json")
    cmd = [ptsim, "simulate", "--model", model, "--hw", os.path.join(root, "hw_profiles", "a100-sxm4-80gb.json"),
           "--gpus", str(gpus), "--tp", str(tp), "--pp", str(pp), "--global-batch-size", str(gbs),
           "--micro-batch-size", str(mbs), "--recompute", "full", "--attention-backend", "unfused",
           "--schedule", "1f1b", "--batch-p2p-sync", "--json", out]
    if host is not None:
        cmd += ["--host-overhead-us", str(host)]
    subprocess.run(cmd, check=True, capture_output=True)
    with open(out) as f:
        return json.load(f)["step_time_s"] * 1e3


def reading(csv_text, host, scratch):
    path = os.path.join(scratch, "gt.csv")
    with open(path, "w", encoding="utf-8") as f:
        f.write(csv_text)
    cmd = [sys.executable, script, "--csv", path, "--ptsim", ptsim, "--jobs", "1"]
    if host is not None:
        cmd += ["--host-overhead-us", str(host)]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


failures = []
with tempfile.TemporaryDirectory() as scratch:
    for host in (None, 0, 35):
        e1 = 100 * (ptsim_ms(2, 16, 8, 1024, 16, 24, 1024, 1, 2, host, scratch) - 400) / 400
        e2 = 100 * (ptsim_ms(8, 8, 1, 1024, 16, 20, 1024, 8, 1, host, scratch) - 800) / 800
        out = reading(SINGLE, host, scratch)
        expect = (abs(e1) + abs(e2)) / 2  # the median of two
        m = re.search(r"2 runs, host [^:]+: median \|error\| ([0-9.]+)%", out)
        if not m or abs(float(m.group(1)) - expect) > 0.006:
            failures.append(f"host {host}: expected median |error| {expect:.2f}%, got: {out}")
        # Row 0 is the even half, row 1 the odd one.
        m = re.search(r"even rows: median \|error\| ([0-9.]+)%\s+odd rows: ([0-9.]+)%", out)
        if not m or abs(float(m.group(1)) - abs(e1)) > 0.006 or abs(float(m.group(2)) - abs(e2)) > 0.006:
            failures.append(f"host {host}: halves should be {abs(e1):.2f}% and {abs(e2):.2f}%, got: {out}")
    e3 = 100 * (ptsim_ms(64, 512, 8, 3072, 32, 30, 2048, 1, 1, None, scratch) - 3566.5) / 3566.5
    out = reading(MULTI, None, scratch)
    if f"3.6: 1 runs, signed median {e3:+.1f}%" not in out:
        failures.append(f"multi-node layout: expected 3.6: {e3:+.1f}%, got: {out}")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)

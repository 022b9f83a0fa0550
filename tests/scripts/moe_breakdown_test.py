#!/usr/bin/env python3
"""moe_breakdown.py's row against what ptsim simulate and ptsim kernels give, read here
independently: the step, each MoE module's share of the kernel time computed from the
kernels' own calls and times, the EP exchanges' split, and an imbalance of 1 giving the
same step."""
import json
import os
import re
import subprocess
import sys
import tempfile

script, ptsim, root = sys.argv[1], sys.argv[2], sys.argv[3]
ARGS = ["--model", os.path.join(root, "configs/models/qwen3-30b-a3b.json"),
        "--hw", os.path.join(root, "hw_profiles/h100-sxm5-80gb.json"),
        "--gpus", "16", "--ep", "8", "--global-batch-size", "16", "--seq-length", "4096",
        "--use-distributed-optimizer"]


def ptsim_json(command, scratch):
    out = os.path.join(scratch, "o.json")
    subprocess.run([ptsim] + command + ARGS + ["--json", out], check=True, capture_output=True)
    with open(out) as f:
        return json.load(f)


def row(imbalance):
    r = subprocess.run([sys.executable, script, "--ptsim", ptsim, "--imbalance", str(imbalance), "--label", "q",
                        "--"] + ARGS, check=True, capture_output=True, text=True)
    cells = [c.strip() for c in r.stdout.strip().strip("|").split("|")]
    assert len(cells) == 11, cells
    return cells


with tempfile.TemporaryDirectory() as scratch:
    step = ptsim_json(["simulate"], scratch)
    kernels = ptsim_json(["kernels"], scratch)

# Kernel time by module, from each kernel's calls of each op name.
total, experts, permute = 0.0, 0.0, 0.0
for k in kernels["kernels"]:
    for name, calls in zip(k["names"], k["calls_by_name"]):
        t = k["time_s"] * calls
        total += t
        module = ".".join(re.sub(r"\.(dgrad|wgrad|bwd)$", "", name.split(".", 1)[1]).split(".")[:2])
        experts += t if module == "moe.experts" else 0
        permute += t if module == "moe.permute" else 0

cells = row(1.2)
failures = []
if cells[1] != f"{step['step_time_s']:.3f} s":
    failures.append(f"step {cells[1]} != {step['step_time_s']:.3f} s")
if cells[2] != f"{100 * experts / total:.1f}%":
    failures.append(f"experts {cells[2]} != {100 * experts / total:.1f}%")
if cells[5] != f"{100 * permute / total:.1f}%":
    failures.append(f"permute {cells[5]} != {100 * permute / total:.1f}%")
ep = step["communication"]["ep"]
if cells[7:10] != [f"{ep['time_s']:.3f} s", f"{ep['exposed_s']:.3f} s", f"{ep['time_s'] - ep['exposed_s']:.3f} s"]:
    failures.append(f"EP {cells[7:10]} != {ep}")
if "(+" not in cells[10]:
    failures.append(f"an imbalance of 1.2 does not slow the step: {cells[10]}")
even = row(1.0)
if even[10] != f"{step['step_time_s']:.3f} s (+0.0%)":
    failures.append(f"imbalance 1 gives {even[10]}, not the step")
if failures:
    sys.exit("moe_breakdown.py: " + "; ".join(failures))
print("moe_breakdown.py: the row is what ptsim simulate and ptsim kernels give")

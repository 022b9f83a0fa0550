#!/usr/bin/env python3
"""Where an MoE model's step goes, as ptsim predicts it: one markdown row.

Runs `ptsim simulate` and `ptsim kernels --by-module` on the same arguments, and
`ptsim simulate` again with --moe-load-imbalance F, and prints the step time, the
shares of the step's kernel time (one rank of each stage) taken by the routed
experts' grouped GEMMs (moe.experts), the shared experts (moe.shared), the router
(moe.router), token permutation and unpermutation (moe.permute, moe.unpermute),
the expert-parallel exchanges' time on rank 0 and how much of it the step waits
for (exposed) or hides, and the step under the given load imbalance.

Usage:
  scripts/moe_breakdown.py --ptsim build/ptsim [--imbalance 1.2] [--label TEXT] -- SIMULATE-ARGS...
Example:
  scripts/moe_breakdown.py --ptsim build/ptsim -- --model configs/models/qwen3-30b-a3b.json \\
      --hw hw_profiles/h100-sxm5-80gb.json --gpus 8 --ep 8 --global-batch-size 64
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

MODULES = ("moe.experts", "moe.shared", "moe.router", "moe.permute", "moe.unpermute")


def run(ptsim, args, json_path):
    result = subprocess.run([ptsim] + args + ["--json", json_path], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"moe_breakdown: {' '.join([ptsim] + args)} failed ({result.returncode}):\n{result.stderr}")
    with open(json_path) as f:
        return json.load(f)


def breakdown(ptsim, args, imbalance):
    with tempfile.TemporaryDirectory() as work:
        step = run(ptsim, ["simulate", "--allow-oom"] + args, os.path.join(work, "step.json"))
        kernels = run(ptsim, ["kernels", "--by-module"] + args, os.path.join(work, "kernels.json"))
        uneven = run(ptsim, ["simulate", "--allow-oom", "--moe-load-imbalance", str(imbalance)] + args,
                     os.path.join(work, "uneven.json"))
    total = sum(m["total_s"] for m in kernels["modules"])
    if total <= 0:
        sys.exit("moe_breakdown: the step runs no kernels")
    shares = {name: 0.0 for name in MODULES}
    for m in kernels["modules"]:
        if m["module"] in shares:
            shares[m["module"]] = m["total_s"] / total
    ep = step["communication"]["ep"]
    return {
        "step_s": step["step_time_s"],
        "shares": shares,
        "ep_s": ep["time_s"],
        "ep_exposed_s": ep["exposed_s"],
        "uneven_step_s": uneven["step_time_s"],
        "fits": step["memory"]["fits"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ptsim", required=True, help="the ptsim binary")
    parser.add_argument("--imbalance", type=float, default=1.2,
                        help="the busiest EP rank's share of routed tokens for the last column (default 1.2)")
    parser.add_argument("--label", default="", help="the row's first column (default: the --model file)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="-- then ptsim simulate's arguments")
    opts = parser.parse_args()
    args = opts.args[1:] if opts.args[:1] == ["--"] else opts.args
    if not args:
        parser.error("give ptsim simulate's arguments after --")
    label = opts.label or next((args[i + 1] for i, a in enumerate(args[:-1]) if a == "--model"), "model")
    b = breakdown(opts.ptsim, args, opts.imbalance)
    s = b["shares"]
    print(f"| {label} | {b['step_s']:.3f} s{'' if b['fits'] else ' (does not fit)'} | "
          + " | ".join(f"{100 * s[m]:.1f}%" for m in MODULES)
          + f" | {b['ep_s']:.3f} s | {b['ep_exposed_s']:.3f} s | {b['ep_s'] - b['ep_exposed_s']:.3f} s"
          + f" | {b['uneven_step_s']:.3f} s ({100 * (b['uneven_step_s'] / b['step_s'] - 1):+.1f}%) |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A fixed pseudo-random sweep of `ptsim simulate` over the shipped models and
profiles and the strategy flags that combine (parallel sizes, schedules,
recomputation, SP, ZeRO, FP8 and its recipes, attention backends, overlaps):
every run must exit 0 with a finite, positive step time, exit 3 with a whole
JSON report that says the strategy does not fit in memory, or exit 2 with an
error message. Exit 3 for anything else, 70, a signal or a hang is a bug. Such a sweep found
that every MoE model at --ep 1 and FP8 on a stage of one rank failed with
'uses communicator slot ..., which this rank has no communicator for'.

    tests/cli/strategy_sweep_test.py PTSIM_BINARY [RUNS] [SEED]
"""
import concurrent.futures
import json
import math
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = ["tiny", "llama3-8b", "mixtral-8x7b", "gpt3-175b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-120b",
          "llama2-7b", "bert-large"]
PROFILES = ["a100-sxm4-80gb", "h100-sxm5-80gb", "b200-sxm-180gb", "gb200-nvl72", "h200-sxm-141gb",
            "h100-roce-llama3"]


def strategy(rng):
    """One command line; most are valid, some are refused by design."""
    model, hw = rng.choice(MODELS), rng.choice(PROFILES)
    tp, pp, cp, dp = rng.choice([1, 1, 2, 4, 8]), rng.choice([1, 1, 2, 4]), rng.choice([1, 1, 1, 2]), rng.choice([1, 2, 4])
    mbs, micro_batches = rng.choice([1, 2]), rng.choice([1, 2, 4, 8])
    args = ["--model", f"configs/models/{model}.json", "--hw", f"hw_profiles/{hw}.json",
            "--gpus", str(tp * pp * cp * dp), "--tp", str(tp), "--pp", str(pp), "--cp", str(cp),
            "--seq-length", str(rng.choice([512, 1024, 2048, 4096])), "--micro-batch-size", str(mbs),
            "--global-batch-size", str(mbs * micro_batches * dp),
            "--mode", "explicit" if rng.random() < 0.3 else "symmetric"]
    if rng.random() < 0.3:
        args += ["--ep", str(rng.choice([1, 2, 4]))]
    if pp > 1 and rng.random() < 0.3:
        args += ["--schedule", "interleaved", "--vpp", str(rng.choice([2, 3]))]
    elif rng.random() < 0.3:
        args += ["--schedule", rng.choice(["1f1b", "gpipe", "zb-h1", "zb-h2", "dualpipe"])]
    if rng.random() < 0.3:
        args += ["--recompute", rng.choice(["none", "selective", "full"])]
    if tp > 1 and rng.random() < 0.5:
        args += ["--sequence-parallel"]
        if rng.random() < 0.3:
            args += ["--tp-comm-overlap"]
    if rng.random() < 0.3:
        args += ["--zero", str(rng.choice([0, 1, 2, 3]))]
    if hw != "a100-sxm4-80gb" and rng.random() < 0.3:
        args += ["--precision", "fp8", "--fp8-recipe", rng.choice(["delayed", "tensorwise"])]
        if rng.random() < 0.3:
            args += ["--fp8-param-gather", "--use-distributed-optimizer"]
    if rng.random() < 0.2:
        args += ["--attention-backend", rng.choice(["flash", "unfused", "cudnn"])]
    if rng.random() < 0.2:
        args += ["--overlap-grad-reduce", "--overlap-param-gather", "--use-distributed-optimizer"]
    if rng.random() < 0.1:
        args += ["--zero3-blocking"]
    if rng.random() < 0.1:
        args += ["--batch-p2p-sync"]
    return args


def run(ptsim, args, out):
    where = "ptsim simulate " + " ".join(args)
    try:
        r = subprocess.run([ptsim, "simulate"] + args + ["--json", out], cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
    except subprocess.TimeoutExpired:
        return ("failed", f"{where}: no answer within 120 s")
    if r.returncode == 0:
        step = json.load(open(out))["step_time_s"]
        return ("simulated", None if math.isfinite(step) and step > 0 else f"{where}: exit 0 with step time {step}")
    if r.returncode == 2 and "error:" in r.stderr:
        return ("refused", None)
    if r.returncode == 3 and "does not fit in memory" in r.stderr:
        # Simulated, and refused for memory: the JSON is whole and says so.
        report = json.load(open(out))
        ok = report["memory"]["fits"] is False and report["memory"]["peak_bytes"] > report["memory"]["capacity_bytes"]
        return ("out of memory", None if ok else f"{where}: exit 3 for memory, but the JSON says {report['memory']}")
    return ("failed", f"{where}: exit {r.returncode}: {r.stderr.strip()[-300:]}")


def main():
    ptsim = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 240
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 20261201)
    commands = [strategy(rng) for _ in range(runs)]
    with tempfile.TemporaryDirectory() as work, concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda i: run(ptsim, commands[i], os.path.join(work, f"{i}.json")), range(runs)))
    failures = [f for _, f in results if f]
    for f in failures:
        print(f)
    simulated = sum(1 for kind, _ in results if kind == "simulated")
    refused = sum(1 for kind, _ in results if kind == "refused")
    oom = sum(1 for kind, _ in results if kind == "out of memory")
    print(f"strategy_sweep_test: {runs} runs: {simulated} simulated and fit, {oom} simulated and do not fit "
          f"(exit 3), {refused} refused with an error, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

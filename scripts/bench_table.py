#!/usr/bin/env python3
"""Runs ptsim's end-to-end benchmark cases and prints one table of medians.

Called by scripts/bench.sh (which builds first); see there for usage. Each run
is a fresh process: its peak RSS comes from wait4()'s rusage of that child
alone, its wall time from a monotonic clock around it, and events and the
simulation's own wall time from the --json it writes.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

GPT3 = ["--model", "configs/models/gpt3-175b.json", "--hw", "hw_profiles/dgx-a100-superpod.json",
        "--gpus", "1024", "--tp", "8", "--pp", "8", "--global-batch-size", "1536",
        "--micro-batch-size", "1", "--schedule", "1f1b"]
# 126 layers over 16 stages: 7 on the first and last (which also hold the
# embedding and the LM head), 8 on each of the 14 between.
LLAMA405 = ["--model", "configs/models/llama3-405b.json", "--hw", "hw_profiles/h100-roce-llama3.json",
            "--gpus", "16384", "--tp", "8", "--pp", "16", "--seq-length", "8192",
            "--global-batch-size", "2048", "--micro-batch-size", "1", "--schedule", "1f1b",
            "--decoder-first-pipeline-num-layers", "7", "--decoder-last-pipeline-num-layers", "7",
            # A speed case: plain 1F1B without recomputation does not fit in
            # 80 GB (simulate exits 3 then), and the engine's work is the same.
            "--allow-oom"]
PLAN_GPT3 = ["--model", "configs/models/gpt3-175b.json", "--hw", "hw_profiles/dgx-a100-superpod.json",
             "--gpus", "1024", "--global-batch-size", "1536", "--top", "5"]
PLAN_LLAMA70 = ["--model", "configs/models/llama3-70b.json", "--hw", "hw_profiles/dgx-h100-superpod.json",
                "--gpus", "512", "--global-batch-size", "512", "--seq-length", "8192", "--top", "5"]

PLAN_LLAMA405 = ["--model", "configs/models/llama3-405b.json", "--hw", "hw_profiles/dgx-h100-superpod.json",
                 "--gpus", "16384", "--global-batch-size", "2048", "--seq-length", "8192", "--top", "5"]
PLAN_MIXTRAL = ["--model", "configs/models/mixtral-8x7b.json", "--hw", "hw_profiles/dgx-h100-superpod.json",
                "--gpus", "256", "--global-batch-size", "1024", "--seq-length", "4096", "--top", "5"]
# The README's sweep and report (issue 30's figures: 13 min and 37 s when it was filed).
SWEEP_README = ["configs/sweeps/llama3-70b-network.json"]
REPORT_README = ["--model", "configs/models/gpt3-175b.json",
                 "--hw", "hw_profiles/dgx-a100-superpod.json,hw_profiles/dgx-h100-superpod.json",
                 "--tokens", "300e9", "--gpus", "512,1024", "--global-batch-size", "1536", "--days", "30",
                 "--price-per-gpu-hour", "2", "--gpu-power-watts", "400"]

# (name, subcommand, arguments, target wall s, target RSS GiB, runs are searches: run --plan-repeats times)
# The searches' targets are issue 30's, on 2 cores.
CASES = [
    ("gpt3-175b 1024 explicit", "simulate", GPT3 + ["--mode", "explicit"], 2.0, 1.0, False),
    ("gpt3-175b 1024 symmetric", "simulate", GPT3 + ["--mode", "symmetric"], 0.020, None, False),
    ("llama3-405b 16384 explicit", "simulate", LLAMA405 + ["--mode", "explicit"], 30.0, 8.0, False),
    ("llama3-405b 16384 symmetric", "simulate", LLAMA405 + ["--mode", "symmetric"], 0.050, None, False),
    ("plan gpt3-175b 1024", "plan", PLAN_GPT3, 3.0, 1.0, True),
    ("plan llama3-70b 512", "plan", PLAN_LLAMA70, 10.0, 1.0, True),
    ("plan mixtral-8x7b 256", "plan", PLAN_MIXTRAL, 30.0, 1.0, True),
    ("plan llama3-405b 16384", "plan", PLAN_LLAMA405, 20.0, 1.0, True),
    ("sweep README", "sweep", SWEEP_README, 60.0, 1.0, True),
    ("report README", "report", REPORT_README, 10.0, 1.0, True),
]


def command(ptsim, subcommand, args, workdir, timing=True):
    """The command line of a case and the JSON file it writes. --timing:
    without it ptsim leaves wall times out so that its outputs are
    reproducible. A report writes a directory (report.json in it); a sweep
    has no --timing."""
    out_json = os.path.join(workdir, "out.json")
    if subcommand == "report":
        return [ptsim, subcommand] + args + ["--out", os.path.join(workdir, "report")], \
            os.path.join(workdir, "report", "report.json")
    if subcommand == "sweep" or not timing:
        return [ptsim, subcommand] + args + ["--json", out_json], out_json
    return [ptsim, subcommand] + args + ["--json", out_json, "--timing"], out_json


def run_once(ptsim, subcommand, args, workdir):
    cmd, out_json = command(ptsim, subcommand, args, workdir)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode != 0:
        sys.exit(f"bench: `{' '.join(cmd)}` failed with exit code {proc.returncode}:\n{stderr}")
    with open(out_json) as f:
        result = json.load(f)
    sim = result.get("simulation", {}) if isinstance(result, dict) else {}
    return {
        "wall_s": wall,
        "sim_wall_s": sim.get("wall_s"),
        "events": sim.get("events"),
        "rss_bytes": usage.ru_maxrss * 1024,  # Linux reports KiB
        "step_time_s": result.get("step_time_s") if isinstance(result, dict) else None,
        "fingerprint": sim.get("fingerprint"),
    }


def count_instructions(ptsim, subcommand, args, workdir):
    """Instructions one run executes, counted by callgrind: unlike wall time,
    the same on a busy or an idle host, so a change's effect shows whatever
    else the machine is doing (about 50x slower than a plain run)."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + \
        command(ptsim, subcommand, args, workdir, timing=False)[0]
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"bench: `{' '.join(cmd)}` failed with exit code {proc.returncode}:\n{proc.stderr}")
    match = re.search(r"Collected : (\d+)", proc.stderr)
    if not match:
        sys.exit(f"bench: callgrind printed no instruction count for `{' '.join(cmd)}`:\n{proc.stderr}")
    return int(match.group(1))


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt_time(s):
    if s is None:
        return "—"
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


def scaling(ptsim, workdir):
    """Explicit GPT-3 175B-shaped runs (TP 8, PP 8, 1F1B) varying one factor of
    ranks × micro-batches × layers at a time; cost per unit should stay flat."""
    with open("configs/models/gpt3-175b.json") as f:
        base_model = json.load(f)
    rows = []

    def run(label, gpus, microbatches, layers):
        model = dict(base_model, num_layers=layers)
        path = os.path.join(workdir, f"gpt3-{layers}l.json")
        with open(path, "w") as f:
            json.dump(model, f)
        dp = gpus // 64
        args = ["--model", path, "--hw", "hw_profiles/dgx-a100-superpod.json", "--gpus", str(gpus),
                "--tp", "8", "--pp", "8", "--global-batch-size", str(dp * microbatches),
                "--micro-batch-size", "1", "--schedule", "1f1b", "--mode", "explicit"]
        print(f"  scaling: {label}", file=sys.stderr, flush=True)
        r = run_once(ptsim, "simulate", args, workdir)
        units = gpus * microbatches * layers
        rows.append([label, str(gpus), str(microbatches), str(layers), f"{r['sim_wall_s']:.3f} s",
                     f"{r['events']:,}", f"{r['sim_wall_s'] / units * 1e9:.1f} ns"])

    for gpus in (64, 128, 256, 512, 1024):
        run("ranks", gpus, 96, 96)
    for m in (12, 24, 48, 192):
        run("micro-batches", 1024, m, 96)
    for layers in (24, 48, 192):
        run("layers", 1024, 96, layers)
    header = ["vary", "ranks", "micro-batches", "layers", "sim wall", "events", "per rank·mb·layer"]
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    print("\nscaling — explicit GPT-3 175B shape, TP 8, PP 8, 1F1B (one run each)")
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ptsim", required=True)
    ap.add_argument("--repeats", type=int, default=3, help="runs per simulate case (default 3)")
    ap.add_argument("--plan-repeats", type=int, default=1, help="runs per plan case (default 1)")
    ap.add_argument("--short-repeats", type=int, default=21,
                    help="runs per simulate case whose target is under a second (default 21, and at "
                         "least --repeats): one run is tens of milliseconds, and on a shared host "
                         "bursts of load move a median of a few runs by half")
    ap.add_argument("--only", default="", help="run only cases whose name contains this text")
    ap.add_argument("--json", help="also write every run's figures to this file")
    ap.add_argument("--micro-bench", help="Google Benchmark binary to run after the table")
    ap.add_argument("--instructions", action="store_true",
                    help="also count each case's instructions once under callgrind (valgrind): "
                         "figures a busy host does not move")
    ap.add_argument("--scaling", action="store_true",
                    help="also print the cost per rank × micro-batch × layer over a range of each")
    opts = ap.parse_args()
    if opts.repeats < 1 or opts.plan_repeats < 1 or opts.short_repeats < 1:
        sys.exit("bench: --repeats, --plan-repeats and --short-repeats must be at least 1")
    if opts.instructions and shutil.which("valgrind") is None:
        sys.exit("bench: --instructions needs valgrind (scripts/setup.sh installs it; "
                 "or apt-get install valgrind)")

    cases = [c for c in CASES if opts.only in c[0]]
    if not cases and not (opts.scaling or opts.micro_bench):
        sys.exit(f"bench: no case name contains '{opts.only}'; cases: " + ", ".join(c[0] for c in CASES))
    rows, record = [], {}
    with tempfile.TemporaryDirectory(prefix="ptsim-bench-") as workdir:
        for name, sub, args, target_wall, target_rss, is_plan in cases:
            short = not is_plan and target_wall is not None and target_wall < 1
            n = opts.plan_repeats if is_plan else max(opts.repeats, opts.short_repeats) if short else opts.repeats
            runs = []
            for i in range(n):
                print(f"  {name}: run {i + 1}/{n}", file=sys.stderr, flush=True)
                runs.append(run_once(opts.ptsim, sub, args, workdir))
            record[name] = runs
            instructions = None
            if opts.instructions:
                print(f"  {name}: counting instructions (callgrind)", file=sys.stderr, flush=True)
                instructions = count_instructions(opts.ptsim, sub, args, workdir)
                for r in runs:
                    r["instructions"] = instructions
            wall = median([r["wall_s"] for r in runs])
            sim_wall = median([r["sim_wall_s"] for r in runs])
            events = median([r["events"] for r in runs])
            rss = median([r["rss_bytes"] for r in runs])
            rate = events / sim_wall if events and sim_wall else None
            measured_wall = wall if is_plan or target_wall is None or target_wall >= 1 else sim_wall
            ok_wall = target_wall is None or measured_wall <= target_wall
            ok_rss = target_rss is None or rss <= target_rss * 2**30
            target = []
            if target_wall is not None:
                target.append(f"{'≤' if ok_wall else 'MISS ≤'}{fmt_time(target_wall)}")
            if target_rss is not None:
                target.append(f"{'≤' if ok_rss else 'MISS ≤'}{target_rss:g} GiB")
            rows.append([name, str(n), fmt_time(wall), fmt_time(sim_wall),
                         f"{events:,.0f}" if events else "—",
                         f"{rate / 1e6:.2f} M/s" if rate else "—",
                         f"{rss / 2**20:,.0f} MiB", ", ".join(target) or "—"])
            if opts.instructions:
                rows[-1][-1:-1] = [f"{instructions / 1e6:,.1f} M",
                                   f"{instructions / events:,.0f}" if events else "—"]

    header = ["case", "runs", "wall", "sim wall", "events", "events/s", "peak RSS", "target"]
    if opts.instructions:
        header[-1:-1] = ["instructions", "per event"]
    if rows:
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
        line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        print(f"ptsim bench — {os.cpu_count()} CPUs, medians over the runs; symmetric targets apply to sim wall")
        print(line(header))
        print("  ".join("-" * w for w in widths))
        for r in rows:
            print(line(r))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(record, f, indent=2)
    if opts.scaling:
        with tempfile.TemporaryDirectory(prefix="ptsim-bench-") as workdir:
            scaling(opts.ptsim, workdir)
    if opts.micro_bench:
        print()
        subprocess.run([opts.micro_bench, "--benchmark_repetitions=3",
                        "--benchmark_report_aggregates_only=true"], check=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""ptsim against vTrain's measured Megatron iteration times (a reading, not a bound).

vTrain (VIA-Research/vTrain, MICRO 2024) ships the iteration times it measured
on A100 clusters: data/ground_truth_single.csv (1,440 single-node runs of GPT
models of hidden 1024 and 2048, 2 to 8 GPUs) and data/ground_truth_multi.csv
(109 runs of 3.6B to 175B models on 64 to 512 GPUs). This script simulates each
row with ptsim as vTrain's runs ran — the published parallel sizes and
micro-batch, full recomputation (vTrain's use_checkpoint), 1F1B, unfused
attention, GPT-2's 50,257-token vocabulary, a host synchronization after
every pipeline send/receive (Megatron-DeepSpeed's p2p_communication.py ends
_communicate with get_accelerator().synchronize()) — and prints the signed and absolute
median errors, overall, per model size and on the two halves of the file (rows
0, 2, 4, … and rows 1, 3, 5, …), so that a constant chosen on one half can be
checked on the other.

  scripts/vtrain_reading.py --csv validation/vtrain/ground_truth_single.csv
  scripts/vtrain_reading.py --csv validation/vtrain/ground_truth_single.csv --host-overhead-us 0
  scripts/vtrain_reading.py --csv validation/vtrain/ground_truth_single.csv --sweep 50,60,70,80 --half even
  scripts/vtrain_reading.py --csv validation/vtrain/ground_truth_multi.csv --max-median-error 8.5

The cluster behind the files is not pinned down (vTrain's own configuration
gives 800 Gb/s between nodes; 40 or 80 GB is not said), so the A100 80GB
profile stands in: these figures are readings, never fitted into a profile.
"""
import argparse
import csv
import json
import os
import statistics

from reading_common import add_common_arguments, enforce_median_bound, require_ptsim, simulate_all, simulated_step_s

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_rows(path):
    """Rows as dicts: gpus, gbs, mbs, hidden, heads, layers, seq, tp, dp, pp, measured_ms, size."""
    with open(path, encoding="utf-8-sig") as f:
        table = list(csv.reader(f))
    header, body = table[0], table[1:]
    multi = header[0].startswith("Parameters")
    rows = []
    for r in body:
        if multi:
            size, r = r[0], r[1:]
        else:
            size = f"h{r[3]}"
        g, gbs, mbs, h, a, l, s, tp, dp, pp, ms = r
        rows.append({"gpus": g, "gbs": gbs, "mbs": mbs, "hidden": int(h), "heads": int(a), "layers": int(l),
                     "seq": int(s), "tp": tp, "dp": dp, "pp": pp, "measured_ms": float(ms), "size": size})
    return rows


def simulate(ptsim, hw, row, host_us, scratch, index):
    model = {"name": f"vtrain-gpt-{row['size']}", "num_layers": row["layers"], "hidden_size": row["hidden"],
             "num_attention_heads": row["heads"], "ffn_hidden_size": 4 * row["hidden"], "vocab_size": 50257,
             "seq_length": row["seq"], "activation": "gelu", "normalization": "layernorm"}
    model_path = os.path.join(scratch, f"model{index}.json")
    out_path = os.path.join(scratch, f"out{index}.json")
    with open(model_path, "w") as f:
        json.dump(model, f)
    cmd = [ptsim, "simulate", "--model", model_path, "--hw", hw, "--gpus", row["gpus"], "--tp", row["tp"],
           "--pp", row["pp"], "--global-batch-size", row["gbs"], "--micro-batch-size", row["mbs"],
           "--recompute", "full", "--attention-backend", "unfused", "--schedule", "1f1b", "--batch-p2p-sync",
           "--json", out_path]
    if host_us is not None:
        cmd += ["--host-overhead-us", str(host_us)]
    return simulated_step_s(cmd, out_path, f"row {index} ({row})") * 1e3


def errors(ptsim, hw, rows, host_us, jobs):
    predicted = simulate_all(rows, lambda i, r, scratch: simulate(ptsim, hw, r, host_us, scratch, i), jobs)
    return [100 * (p - r["measured_ms"]) / r["measured_ms"] for p, r in zip(predicted, rows)]


def median_abs(values):
    return statistics.median(abs(e) for e in values) if values else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", required=True, help="vTrain's data/ground_truth_single.csv or ground_truth_multi.csv")
    ap.add_argument("--hw", default=os.path.join(ROOT, "hw_profiles", "a100-sxm4-80gb.json"))
    ap.add_argument("--host-overhead-us", type=float,
                    help="ptsim's --host-overhead-us for every row (default: ptsim's own, 70; 0 switches it off)")
    ap.add_argument("--sweep", help="comma-separated host overheads (µs): the median |error| of each on --half")
    ap.add_argument("--half", choices=["even", "odd", "all"], default="all", help="rows the sweep reads")
    add_common_arguments(ap, ROOT, "all rows")
    args = ap.parse_args()
    require_ptsim(args.ptsim)
    rows = load_rows(args.csv)
    if args.sweep:
        pick = {"even": rows[0::2], "odd": rows[1::2], "all": rows}[args.half]
        for value in (float(v) for v in args.sweep.split(",")):
            e = errors(args.ptsim, args.hw, pick, value, args.jobs)
            print(f"host {value:g} µs: {args.half} rows {len(pick)}, median |error| {median_abs(e):.2f}%, "
                  f"signed {statistics.median(e):+.2f}%")
        return
    e = errors(args.ptsim, args.hw, rows, args.host_overhead_us, args.jobs)
    host = "ptsim's default" if args.host_overhead_us is None else f"{args.host_overhead_us:g} µs per task"
    print(f"{len(rows)} runs, host {host}: median |error| {median_abs(e):.2f}%, "
          f"signed median {statistics.median(e):+.2f}%, within 10%: {sum(abs(x) <= 10 for x in e)}")
    print(f"  even rows: median |error| {median_abs(e[0::2]):.2f}%   odd rows: {median_abs(e[1::2]):.2f}%")
    groups = {}
    for err, r in zip(e, rows):
        groups.setdefault(r["size"], []).append(err)
    for size, g in groups.items():
        print(f"  {size}: {len(g)} runs, signed median {statistics.median(g):+.1f}%, median |error| "
              f"{median_abs(g):.1f}%")
    enforce_median_bound(e, args.max_median_error, "all rows'", "vtrain_reading")


if __name__ == "__main__":
    main()

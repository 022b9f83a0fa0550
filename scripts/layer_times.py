#!/usr/bin/env python3
"""Sets ptsim's time per transformer layer against measured per-layer times.

A measured per-layer time (a profiler's forward and backward pass of one
layer, as Korthikanti et al. 2022 give in their Table 4) isolates one GPU's
kernels and its tensor-parallel collectives from everything a whole step adds
(pipeline bubbles, data-parallel reduction, the optimizer). For every case of a
ptsim-layer-times/1 file (validation/heldout_layer_times.json) this script runs
`ptsim simulate` with a Chrome trace of rank 0 and reads the layer times off
the trace:

  forward of layer l   from the start of l's first forward task to the start
                       of layer l+1's first forward task, so the collectives
                       and waits between them count, as a profiler's span does;
  backward of layer l  the same over the backward and recomputation tasks,
                       which run from the last layer to the first.

It reports the median over the layers of the step, leaving out the two at
each end (whose spans also hold the embedding or the loss).

Usage:
  scripts/layer_times.py [--ptsim build/ptsim] [--times validation/heldout_layer_times.json]
                         [--software validation/software.json] [--max-error PCT] [--json FILE]

Exits 4 when the median |error| of the combined (forward + backward) times
exceeds --max-error, 2 on bad input, 3 when ptsim fails.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

FORWARD_CATEGORIES = {"forward"}
BACKWARD_CATEGORIES = {"backward", "recompute"}


def fail(code, message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        fail(2, f"{path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(2, f"{path}: not JSON: {e}")


def require(obj, key, where, kind):
    if key not in obj:
        fail(2, f"{where}: missing '{key}' (expected {kind.__name__})")
    value = obj[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is float and value <= 0):
        fail(2, f"{where}/{key} = {json.dumps(value)}: expected a positive number"
             if kind is float else f"{where}/{key}: expected {kind.__name__}")
    return value


def software_settings(software, software_path, prefix, where):
    """The strategy keys the software file gives runs whose id starts with prefix:
    its stack's (a path relative to the software file), the source's own on top."""
    for source in software.get("sources", []):
        if source.get("runs") == prefix:
            settings = {}
            if "stack" in source:
                stack_path = os.path.join(os.path.dirname(software_path), source["stack"])
                settings.update(load_json(stack_path).get("settings", {}))
            settings.update(source.get("settings", {}))
            return settings
    fail(2, f"{where}/software = \"{prefix}\": no source with that 'runs' prefix in the software file")


def layer_phase_starts(trace):
    """{'forward'|'backward': {layer: start µs}} of rank 0's per-layer tasks."""
    starts = {"forward": {}, "backward": {}}
    for e in trace.get("traceEvents", []):
        if e.get("ph") != "X" or e.get("pid") != 0:
            continue
        layer = e.get("args", {}).get("layer", -1)
        if layer is None or layer < 0:
            continue
        # A task's phase is its name's first word (fwd, bwd, recompute); the
        # category of a collective is its stream ('tp'), not its phase.
        head = e["name"].split(".", 1)[0]
        phase = "forward" if head == "fwd" else "backward" if head in ("bwd", "recompute") else None
        if phase is None:
            continue
        ts = float(e["ts"])
        if layer not in starts[phase] or ts < starts[phase][layer]:
            starts[phase][layer] = ts
    return starts


def median_layer_span_ms(starts_by_layer):
    """Median start-to-next-start span, in run order, without two layers at each end."""
    order = sorted(starts_by_layer, key=lambda l: starts_by_layer[l])
    spans = [starts_by_layer[b] - starts_by_layer[a] for a, b in zip(order, order[1:])]
    inner = spans[2:-2] if len(spans) > 6 else spans
    if not inner:
        return None
    return statistics.median(inner) / 1000.0


def simulate_case(ptsim, hw_dir, model, hardware, strategy, tmp):
    model_path = os.path.join(tmp, "model.json")
    strategy_path = os.path.join(tmp, "strategy.json")
    trace_path = os.path.join(tmp, "trace.json")
    with open(model_path, "w", encoding="utf-8") as f:
        json.dump(model, f)
    with open(strategy_path, "w", encoding="utf-8") as f:
        json.dump(strategy, f)
    cmd = [ptsim, "simulate", "--model", model_path, "--hw", os.path.join(hw_dir, hardware + ".json"),
           "--strategy", strategy_path, "--trace", trace_path, "--trace-ranks", "0",
           "--mode", "explicit",
           # A layer's time does not depend on whether the whole step fits:
           # Korthikanti et al. time the no-recomputation baseline of the 22B
           # model, whose full step needs more than 80 GB.
           "--allow-oom"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        fail(3, f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}")
    return layer_phase_starts(load_json(trace_path))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptsim", default="build/ptsim")
    ap.add_argument("--times", default="validation/heldout_layer_times.json")
    ap.add_argument("--software", default="validation/software.json")
    ap.add_argument("--hw-dir", default="hw_profiles")
    ap.add_argument("--max-error", type=float, help="fail (exit 4) above this median |error| %% of the combined time")
    ap.add_argument("--json", help="write the table as JSON")
    args = ap.parse_args()

    data = load_json(args.times)
    if data.get("schema") != "ptsim-layer-times/1":
        fail(2, f"{args.times}/schema = {json.dumps(data.get('schema'))}: expected \"ptsim-layer-times/1\"")
    software = load_json(args.software)

    rows = []
    for si, s in enumerate(require(data, "sets", args.times, list)):
        where = f"{args.times}/sets/{si}"
        base = software_settings(software, args.software, require(s, "software", where, str), where)
        base.update(require(s, "strategy", where, dict))
        for ci, case in enumerate(require(s, "cases", where, list)):
            cwhere = f"{where}/cases/{ci}"
            strategy = dict(base)
            strategy.update(require(case, "strategy", cwhere, dict))
            with tempfile.TemporaryDirectory() as tmp:
                starts = simulate_case(args.ptsim, args.hw_dir, require(s, "model", where, dict),
                                       require(s, "hardware", where, str), strategy, tmp)
            fwd = median_layer_span_ms(starts["forward"])
            bwd = median_layer_span_ms(starts["backward"])
            if fwd is None or bwd is None:
                fail(3, f"{cwhere}: the trace holds no per-layer forward or backward tasks")
            mf = require(case, "forward_ms", cwhere, float)
            mb = require(case, "backward_ms", cwhere, float)
            rows.append({
                "id": f"{s['id']}/{require(case, 'id', cwhere, str)}",
                "measured_forward_ms": mf, "predicted_forward_ms": fwd,
                "forward_error_pct": 100 * (fwd - mf) / mf,
                "measured_backward_ms": mb, "predicted_backward_ms": bwd,
                "backward_error_pct": 100 * (bwd - mb) / mb,
                "measured_combined_ms": mf + mb, "predicted_combined_ms": fwd + bwd,
                "combined_error_pct": 100 * (fwd + bwd - mf - mb) / (mf + mb),
            })

    print(f"{'case':58s} {'fwd meas':>8s} {'pred':>7s} {'err':>7s}  {'bwd meas':>8s} {'pred':>7s} {'err':>7s}  "
          f"{'sum meas':>8s} {'pred':>7s} {'err':>7s}")
    for r in rows:
        print(f"{r['id']:58s} {r['measured_forward_ms']:8.2f} {r['predicted_forward_ms']:7.2f} "
              f"{r['forward_error_pct']:+6.1f}%  {r['measured_backward_ms']:8.2f} {r['predicted_backward_ms']:7.2f} "
              f"{r['backward_error_pct']:+6.1f}%  {r['measured_combined_ms']:8.2f} {r['predicted_combined_ms']:7.2f} "
              f"{r['combined_error_pct']:+6.1f}%")
    median = statistics.median(abs(r["combined_error_pct"]) for r in rows)
    print(f"summary: {len(rows)} cases (times in ms per layer), median |error| of forward "
          f"{statistics.median(abs(r['forward_error_pct']) for r in rows):.1f}%, of backward "
          f"{statistics.median(abs(r['backward_error_pct']) for r in rows):.1f}%, of the sum {median:.1f}%")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"cases": rows, "median_abs_combined_error_pct": median}, f, indent=1)
    if args.max_error is not None and median > args.max_error:
        print(f"error: median |error| {median:.1f}% exceeds --max-error {args.max_error}%", file=sys.stderr)
        sys.exit(4)


if __name__ == "__main__":
    main()

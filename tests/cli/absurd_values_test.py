#!/usr/bin/env python3
"""Every number of a model file (ours and a Hugging Face config.json), a hardware profile, a strategy file and a measurement file, set in turn to an absurd value
(0, -1, 0.5, 1e300, 1e-300, 2^40, 2^63; calibration, attention and expert-exchange tables: the first two entries of each
list), must give either a finite simulation or an error that names the field: exit 0 with every output number finite and a positive step
time, or exit 2 with a message holding the field's key (or exit 3 for a simulated time
beyond the clock's range). Never another exit code, a signal, a hang or a NaN.

    tests/cli/absurd_values_test.py PTSIM_BINARY
"""
import concurrent.futures
import copy
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VALUES = [0, -1, 0.5, 1e300, 1e-300, 2**40, 2**63]


def numeric_leaves(x, path=()):
    if isinstance(x, dict):
        for k, v in x.items():
            if k in ("sources", "source"):
                continue
            yield from numeric_leaves(v, path + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from numeric_leaves(v, path + (i,))
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        yield path


def set_at(d, path, value):
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value


def finite_numbers(x):
    if isinstance(x, dict):
        return all(finite_numbers(v) for v in x.values())
    if isinstance(x, list):
        return all(finite_numbers(v) for v in x)
    if isinstance(x, float):
        return math.isfinite(x)
    return True


def check(ptsim, command, out, where, key, needs_positive_step):
    """Runs one ptsim command; a failure message, or None."""
    try:
        r = subprocess.run([ptsim] + command + ["--json", out], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return f"{where}: no answer within 60 s"
    if r.returncode == 0:
        result = json.load(open(out))
        if not finite_numbers(result) or (needs_positive_step and not result["step_time_s"] > 0):
            return f"{where}: exit 0 with a non-finite or zero figure"
        return None
    if r.returncode == 2:
        return None if key in r.stderr else f"{where}: the error does not name '{key}': {r.stderr.strip()}"
    if r.returncode == 3 and needs_positive_step and "outside simulated time's range" in r.stderr:
        return None
    if r.returncode == 3 and needs_positive_step and "does not fit in memory" in r.stderr:
        # Simulated, over HBM: the report is whole and finite, and says so.
        result = json.load(open(out))
        if not finite_numbers(result) or result["memory"]["fits"]:
            return f"{where}: exit 3 for memory, but the JSON is not finite or says it fits"
        return None
    return f"{where}: exit {r.returncode}: {r.stderr.strip()[-300:]}"


def main():
    ptsim = os.path.abspath(sys.argv[1])
    model = json.load(open(os.path.join(ROOT, "configs/models/tiny.json")))
    profiles = {name: json.load(open(os.path.join(ROOT, f"hw_profiles/{name}.json")))
                for name in ("a100-sxm4-80gb", "gb200-nvl72", "h100-sxm5-80gb")}
    strategy = ["--gpus", "16", "--tp", "2", "--pp", "2", "--global-batch-size", "8"]
    hf = json.load(open(os.path.join(ROOT, "fuzz/corpus/fuzz_hf_config/llama3-8b.json")))
    cases = [("model", None, p) for p in numeric_leaves(model)] + [("hf", None, p) for p in numeric_leaves(hf)]
    # Calibration, attention (by length, by head shape) and expert-exchange
    # tables: their first two entries of each list stand for the rest.
    def sampled(p):
        tables = ("by_sequence", "by_head_dim", "hybridep", "deepep")
        in_table = any(t in p for t in tables) and isinstance(p[-1], int)
        return not in_table or p[-1] in (0, 1)
    for name, hw in profiles.items():
        cases += [("hw", name, p) for p in numeric_leaves(hw)
                  if (p[0] != "calibration" or name == "h100-sxm5-80gb" and p[-1] in (0, 1)) and sampled(p)]
    # A strategy file's numbers, and a measurement file's (through check-kernels).
    strategy_file = {"gpus": 16, "tp": 2, "pp": 2, "global_batch_size": 16, "micro_batch_size": 2,
                     "virtual_pipeline_model_parallel_size": 2, "recompute": "full",
                     "recompute_num_layers": 1}
    measurements = json.load(open(os.path.join(ROOT, "fuzz/corpus/fuzz_measurements/copy.json")))
    with tempfile.TemporaryDirectory() as work:
        # Every run gets files of its own, so that runs go in parallel (one per
        # CPU: under the sanitizers this test is the suite's longest).
        jobs = []  # (command, out, where, key, needs_positive_step)
        for kind, name, path in cases:
            for value in VALUES:
                m = copy.deepcopy(hf if kind == "hf" else model)
                h = copy.deepcopy(profiles[name or "a100-sxm4-80gb"])
                set_at(h if kind == "hw" else m, path, value)
                n = len(jobs)
                m_path, h_path, out = (os.path.join(work, f"{n}.{f}") for f in ("m.json", "h.json", "out.json"))
                json.dump(m, open(m_path, "w"))
                json.dump(h, open(h_path, "w"))
                field = "/".join(str(p) for p in path)
                key = str(path[-1]) if not isinstance(path[-1], int) else str(path[-2])
                jobs.append((["simulate", "--model", m_path, "--hw", h_path] + strategy, out,
                             f"{kind} {name or 'tiny'}: /{field} = {value}", key, True))
        m_path, h_path = os.path.join(work, "base.m.json"), os.path.join(work, "base.h.json")
        json.dump(model, open(m_path, "w"))
        json.dump(profiles["a100-sxm4-80gb"], open(h_path, "w"))
        for kind, base, command in (
                ("strategy", strategy_file, ["simulate", "--model", m_path, "--hw", h_path, "--strategy"]),
                ("measurements", measurements, ["check-kernels", "--hw", h_path, "--all", "--measurements"])):
            for path in numeric_leaves(base):
                for value in VALUES:
                    doc = copy.deepcopy(base)
                    set_at(doc, path, value)
                    n = len(jobs)
                    s_path, out = os.path.join(work, f"{n}.s.json"), os.path.join(work, f"{n}.out.json")
                    json.dump(doc, open(s_path, "w"))
                    jobs.append((command + [s_path], out, f"{kind}: /{'/'.join(str(p) for p in path)} = {value}",
                                 str(path[-1]), False))
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            failures = [f for f in pool.map(lambda j: check(ptsim, *j), jobs) if f is not None]
    for f in failures:
        print("absurd_values_test: FAIL:", f, file=sys.stderr)
    print(f"absurd_values_test: {len(jobs)} runs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

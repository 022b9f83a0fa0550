#!/usr/bin/env python3
"""scripts/import_vidur_linear_profile.py turns Vidur's mlp.csv rows into GEMMs
of the shapes Vidur's reference model builds, keeps only the token counts and
sizes asked for, and refuses files without Vidur's columns.

usage: import_vidur_linear_profile_test.py SCRIPT
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

OPS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")


def row(heads, kv, hidden, ffn, gated, tokens, tp, ms):
    r = {"n_head": heads, "n_kv_head": kv, "n_embd": hidden, "n_expanded_embd": ffn, "vocab_size": 32000,
         "use_gated_mlp": "True" if gated else "False", "num_tokens": tokens, "num_tensor_parallel_workers": tp}
    for op in OPS:
        for stat, f in (("min", 0.9), ("max", 1.2), ("mean", 1.05), ("median", 1.0), ("std", 0.01)):
            r[f"time_stats.{op}.{stat}"] = ms[op] * f
    return r


def main():
    script = sys.argv[1]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mlp.csv")
        # Llama-2-70B-like: 64 heads, 8 KV heads, hidden 8192, gated FFN 28672, at TP 2;
        # a GPT-like ungated one at TP 1; token counts 2048 (kept) and 3000 (not asked for).
        ms = {"attn_pre_proj": 1.0, "attn_post_proj": 2.0, "mlp_up_proj": 3.0, "mlp_down_proj": 4.0}
        rows = [row(64, 8, 8192, 28672, True, 2048, 2, ms), row(64, 8, 8192, 28672, True, 3000, 2, ms),
                row(16, 16, 2048, 8192, False, 2048, 1, ms)]
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        out = os.path.join(tmp, "out.json")
        p = subprocess.run([sys.executable, script, "--tokens", "2048", "--min-dim", "1024", "--record-dtype", "bf16",
                            "DEV", "SRC", out, path], capture_output=True, text=True)
        check(p.returncode == 0, f"import failed: {p.stderr}")
        doc = json.load(open(out))
        check(doc["schema"] == "ptsim-measurements/1", "schema")
        check("recorded as bf16" in doc["method"]["note"], "the note says fp16 was recorded as bf16")
        got = sorted((k["shape"]["m"], k["shape"]["n"], k["shape"]["k"], round(k["time_s"] * 1e3, 9))
                     for k in doc["kernels"])
        d = 8192 // 64
        want = sorted([
            # TP 2: QKV (64 + 2·8)·128/2 = 5120 outputs of 8192; projection 8192 of 64·128/2 = 4096;
            # gated up 2·28672/2 = 28672 of 8192; down 8192 of 28672/2 = 14336.
            (2048, (64 + 16) * d // 2, 8192, 1.0), (2048, 8192, 64 * d // 2, 2.0),
            (2048, 2 * 28672 // 2, 8192, 3.0), (2048, 8192, 28672 // 2, 4.0),
            # TP 1, ungated, MHA: QKV 3·2048, projection 2048 of 2048, up 8192, down 2048 of 8192.
            (2048, 3 * 2048, 2048, 1.0), (2048, 2048, 2048, 2.0), (2048, 8192, 2048, 3.0), (2048, 2048, 8192, 4.0)])
        check(got == want, f"shapes and medians: got {got}, want {want}")
        for k in doc["kernels"]:
            check(k["dtype"] == "bf16" and k["verified"] is False, "dtype bf16, unverified")
            check(abs(k["flops"] - 2 * k["shape"]["m"] * k["shape"]["n"] * k["shape"]["k"]) < 1, "flops = 2mnk")
            check(k["min_s"] <= k["time_s"] <= k["max_s"], "min <= median <= max")
        # --min-dim drops the TP-1 model's 2048-wide GEMMs.
        p = subprocess.run([sys.executable, script, "--tokens", "2048", "--min-dim", "4096", "DEV", "SRC", out, path],
                           capture_output=True, text=True)
        check(p.returncode == 0 and len(json.load(open(out))["kernels"]) == 4, "--min-dim 4096 keeps the 4 TP-2 GEMMs")
        # A file without Vidur's columns is refused with its line.
        bad = os.path.join(tmp, "bad.csv")
        with open(bad, "w") as f:
            f.write("a,b\n1,2\n")
        p = subprocess.run([sys.executable, script, "DEV", "SRC", out, bad], capture_output=True, text=True)
        check(p.returncode != 0 and "bad.csv:2" in p.stderr and "Vidur" in p.stderr, f"bad file: {p.stderr}")
    for f in failures:
        print("FAILED:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

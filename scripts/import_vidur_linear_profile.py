#!/usr/bin/env python3
"""Converts Vidur's profiled linear-layer times into a ptsim measurement file.

Vidur (microsoft/vidur, MIT licence) ships the GPU time of every linear layer
of several models, profiled per device SKU: data/profiling/compute/<sku>/
<org>/<model>/mlp.csv. Each row is one model at one tensor-parallel size and
one token count; for the four linears of a layer it gives min, max, mean and
median of the CUDA time (ms) the PyTorch profiler recorded for the layer's
F.linear (fp16, the model in eval mode, 20 active steps after warm-up:
vidur/profiling/mlp/). The shapes follow from the model columns, as Vidur's
reference model (vidur/profiling/mlp/mlp_impl.py) builds its layers, each
split over the tensor-parallel size t:

  attn_pre_proj   m = tokens, n = (heads + 2·kv_heads)·head_dim / t, k = hidden
  attn_post_proj  m = tokens, n = hidden, k = heads·head_dim / t
  mlp_up_proj     m = tokens, n = (2 if gated) · ffn / t, k = hidden
  mlp_down_proj   m = tokens, n = hidden, k = ffn / t

This script writes those as ptsim-measurements/1 GEMM kernels (time = the
median; min and max as recorded), keeping the token counts in --tokens (the
training-sized ones by default) and the GEMMs whose n and k are at least
--min-dim, marked unverified: ptsim did not check their results. When two
models give the same shape, both are kept.

--record-dtype records them under another dtype of the same tensor-core rate
(bf16 for Vidur's fp16 on A100 and H100, whose dense fp16 and bf16 peaks are
equal and whose cuBLAS kernels come in the same families for both), saying so
in the file's method note.

usage: import_vidur_linear_profile.py [--tokens LIST] [--min-dim N] [--record-dtype DTYPE]
           DEVICE_NAME SOURCE OUT CSV [CSV ...]
  DEVICE_NAME  what to call the device, e.g. "NVIDIA A100 80GB (Vidur profile, fp16)"
  SOURCE       where the CSVs came from (repository, path, commit), recorded in the file
  OUT          the measurement file to write
  CSV          mlp.csv files of one SKU
"""
import argparse
import csv
import json
import sys

OPS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")


def shapes(row):
    heads, kv, hidden = int(row["n_head"]), int(row["n_kv_head"]), int(row["n_embd"])
    ffn, t = int(row["n_expanded_embd"]), int(row["num_tensor_parallel_workers"])
    gated = row["use_gated_mlp"].strip() == "True"
    d = hidden // heads
    return {
        "attn_pre_proj": ((heads + 2 * kv) * d // t, hidden),
        "attn_post_proj": (hidden, heads * d // t),
        "mlp_up_proj": ((2 if gated else 1) * ffn // t, hidden),
        "mlp_down_proj": (hidden, ffn // t),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", default="1024,2048,4096,8192,16384,32768",
                    help="token counts (m) to keep, comma-separated")
    ap.add_argument("--min-dim", type=int, default=1024, help="smallest n and k to keep")
    ap.add_argument("--record-dtype", default="fp16", choices=["fp16", "bf16"],
                    help="dtype to record the fp16 measurements under (default fp16)")
    ap.add_argument("device")
    ap.add_argument("source")
    ap.add_argument("out")
    ap.add_argument("csv", nargs="+")
    args = ap.parse_args()
    tokens = {int(x) for x in args.tokens.split(",")}

    kernels = []
    for path in args.csv:
        with open(path, newline="", encoding="utf-8-sig") as f:
            for line, row in enumerate(csv.DictReader(f), start=2):
                try:
                    m = int(row["num_tokens"])
                    if m not in tokens:
                        continue
                    for op, (n, k) in shapes(row).items():
                        if n < args.min_dim or k < args.min_dim:
                            continue
                        ms = [float(row[f"time_stats.{op}.{s}"]) for s in ("median", "min", "max")]
                        kernels.append({
                            "op": "gemm", "dtype": args.record_dtype,
                            "shape": {"m": m, "n": n, "k": k, "batch": 1},
                            "time_s": ms[0] * 1e-3, "min_s": ms[1] * 1e-3, "max_s": ms[2] * 1e-3,
                            "flops": 2.0 * m * n * k, "bytes": 2.0 * (m * k + k * n + m * n),
                            "verified": False})
                except (KeyError, ValueError) as e:
                    sys.exit(f"{path}:{line}: {e}: expected Vidur's mlp.csv columns")
    if not kernels:
        sys.exit("no GEMM kept: check --tokens and --min-dim against the files")
    kernels.sort(key=lambda x: (x["shape"]["m"], x["shape"]["n"], x["shape"]["k"], x["time_s"]))
    doc = {"schema": "ptsim-measurements/1",
           "device": {"kind": "gpu", "name": args.device, "source": args.source},
           "date": "as published",
           "method": {"statistic": "median of 20 profiled steps (Vidur), min and max as recorded",
                      "inputs": "random fp16 weights and activations (Vidur's profiler)",
                      "note": "third-party measurements of forward F.linear calls inside a model's layer, "
                              "CUDA time from the PyTorch profiler; results not checked by ptsim"
                              + ("" if args.record_dtype == "fp16" else
                                 f"; measured in fp16, recorded as {args.record_dtype} (equal dense "
                                 "tensor-core rate on this GPU)")},
           "kernels": kernels}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{args.out}: {len(kernels)} GEMMs (measured in fp16, recorded as {args.record_dtype}) from {len(args.csv)} files")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""ptsim against llm-foundry's measured MPT training throughputs (a reading, not a bound).

llm-foundry (mosaicml/llm-foundry, scripts/train/benchmarking/README.md at
5e85bd62d, copied to validation/llm-foundry/benchmarks.md) publishes the
throughput of MPT models of 125M to 70B parameters trained by Composer with
PyTorch FSDP on A100s (40 and 80 GB) and H100s, 8 to 512 GPUs, 512 to 65,536
tokens a sequence. This script simulates every bf16 row as it ran — the model
of its yaml (scripts/train/yamls/pretrain/mpt-*.yaml: GeLU MLP of 4h, biases,
LayerNorm, learned positions, tied 50,368-token embedding, no dropout), its
GPUs, micro-batch and global batch, the composer-2024 stack, --recompute full
where it checkpointed, --reshard-after-forward never for SHARD_GRAD_OP,
--grad-reduce-in-bf16 for PURE, and the attention kernel of its table:

  2023 tables (H100 80GB BF16, A100 80GB, A100 40GB): attn_impl triton, the
      default of submit_benchmarks.py and of the yamls, which the sweeps of
      2023 never override: --attention-backend triton on the A100; on the
      H100, where no measurement of that kernel is published, flash2
      (FlashAttention-2), an upper bound on its speed.
  2024 large-scale H100 table: sweep.py's --attn_impl flash (flash-attn 2.4.2,
      flash2) for 1b, 3b, 7b and 70b; triton for 13b and 30b (flash2 again).

The measured step is the batch's tokens over the table's tokens per second.
It prints the signed and absolute median errors per table and per GPU, and
with --max-median-error exits 4 when the rows of --gpu exceed it (a drift
guard; nothing here is fitted). The FP8 table (Transformer Engine layers) is
left out.

  scripts/llm_foundry_reading.py
  scripts/llm_foundry_reading.py --gpu a100 --max-median-error 8.8
  scripts/llm_foundry_reading.py --rows        # every row
"""
import argparse
import json
import os
import sys

from reading_common import add_common_arguments, enforce_median_bound, require_ptsim, simulate_all, simulated_step_s, summary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLES = os.path.join(ROOT, "validation", "llm-foundry", "benchmarks.md")

# scripts/train/yamls/pretrain/mpt-<size>.yaml at 5e85bd62d: d_model, n_heads, n_layers.
MPT = {"125m": (768, 12, 12), "350m": (1024, 16, 24), "760m": (1536, 12, 24), "1b": (2048, 16, 24),
       "3b": (2560, 20, 32), "7b": (4096, 32, 32), "13b": (5120, 40, 40), "30b": (7168, 56, 48),
       "70b": (8192, 64, 80)}
PROFILES = {"a100_40gb": "a100-sxm4-40gb", "a100_80gb": "a100-sxm4-80gb", "h100_80gb": "h100-sxm5-80gb"}
LARGE_SCALE_FLASH = {"1b", "3b", "7b", "70b"}  # sweep.py --attn_impl flash; the others triton


def load_rows(path):
    """The bf16 rows of every table, as dicts."""
    rows, table = [], None
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                table = line[3:].strip()
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 20 or cells[0] in ("Model", "---") or cells[14] == "amp_fp8":
                continue
            if cells[0] not in MPT or cells[3] not in PROFILES:
                sys.exit(f"{path}: row {cells[:4]}: unknown model or GPU (known: {sorted(MPT)}, {sorted(PROFILES)})")
            rows.append({"table": table, "model": cells[0], "seq": int(cells[1]), "gpus": int(cells[2]),
                         "gpu": cells[3], "mbs": int(cells[7]), "accum": int(cells[8]), "gbs": int(cells[9]),
                         "tokens_per_s": float(cells[11]), "batch_tokens": int(cells[13]),
                         "mixed_precision": cells[15], "sharding": cells[16], "checkpointing": cells[17] == "True"})
    if not rows:
        sys.exit(f"{path}: no benchmark rows found")
    return rows


def attention_backend(row):
    if row["table"].startswith("H100 80GB BF16 (Large Scale") and row["model"] in LARGE_SCALE_FLASH:
        return "flash2"
    return "triton" if row["gpu"].startswith("a100") else "flash2"


def simulate(ptsim, row, scratch, index):
    h, a, layers = MPT[row["model"]]
    model = {"name": f"MPT-{row['model']}", "num_layers": layers, "hidden_size": h, "num_attention_heads": a,
             "ffn_hidden_size": 4 * h, "vocab_size": 50368, "seq_length": row["seq"], "activation": "gelu",
             "normalization": "layernorm", "position_embedding_type": "learned_absolute", "tie_embeddings": True,
             "add_bias_linear": True, "dropout": 0.0}
    model_path = os.path.join(scratch, f"model{index}.json")
    out_path = os.path.join(scratch, f"out{index}.json")
    with open(model_path, "w") as f:
        json.dump(model, f)
    cmd = [ptsim, "simulate", "--model", model_path, "--hw",
           os.path.join(ROOT, "hw_profiles", PROFILES[row["gpu"]] + ".json"), "--gpus", str(row["gpus"]),
           "--global-batch-size", str(row["gbs"]), "--micro-batch-size", str(row["mbs"]), "--stack",
           "composer-2024", "--attention-backend", attention_backend(row), "--allow-oom", "--json", out_path]
    if row["checkpointing"]:
        cmd += ["--recompute", "full"]
    if row["sharding"] == "SHARD_GRAD_OP":
        cmd += ["--reshard-after-forward", "never"]
    if row["mixed_precision"] == "PURE":
        cmd += ["--grad-reduce-in-bf16"]
    return simulated_step_s(cmd, out_path, f"row {index} ({row})")


def measured_s(row):
    return row["batch_tokens"] / row["tokens_per_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", default=TABLES, help="llm-foundry's benchmark README (default: the copy here)")
    ap.add_argument("--gpu", choices=["a100", "h100", "all"], default="all", help="rows --max-median-error reads")
    ap.add_argument("--rows", action="store_true", help="print every row")
    add_common_arguments(ap, ROOT, "the --gpu rows")
    args = ap.parse_args()
    require_ptsim(args.ptsim)
    rows = load_rows(args.tables)
    predicted = simulate_all(rows, lambda i, r, scratch: simulate(args.ptsim, r, scratch, i), args.jobs)
    errors = [100 * (p / measured_s(r) - 1) for p, r in zip(predicted, rows)]
    if args.rows:
        for r, p, e in zip(rows, predicted, errors):
            print(f"{r['gpu']:9} {r['model']:>4} seq {r['seq']:>5} {r['gpus']:>3} GPUs mbs {r['mbs']:>3} "
                  f"{'ckpt' if r['checkpointing'] else '    '} {attention_backend(r):6} measured {measured_s(r):8.3f} s "
                  f"predicted {p:8.3f} s {e:+6.1f}%")
    for table in dict.fromkeys(r["table"] for r in rows):
        print(summary(table, [e for e, r in zip(errors, rows) if r["table"] == table]))
    picked = {g: [e for e, r in zip(errors, rows) if r["gpu"].startswith(g)] for g in ("a100", "h100")}
    picked["all"] = errors
    for g in ("a100", "h100"):
        print(summary(g.upper(), picked[g]))
    enforce_median_bound(picked[args.gpu], args.max_median_error, f"{args.gpu} rows'", "llm_foundry_reading")


if __name__ == "__main__":
    main()

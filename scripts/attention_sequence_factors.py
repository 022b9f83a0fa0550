#!/usr/bin/env python3
"""Prints the attention_efficiency.by_sequence tables of the A100, Hopper, GB200 and GB300 profiles.

A fused attention kernel's throughput depends on the sequence length and the
causal mask: short sequences leave a larger share of each tile's prologue and
epilogue, and a causal mask leaves diagonal tiles half empty. The profiles'
efficiencies are measured at 16k tokens without a mask; these tables give,
for each pass and mask, the throughput at other lengths as a factor of that
figure, from two published measurements on GH100:

FA3  FlashAttention-3 (Shah et al., arXiv 2407.08608) Fig. 5(c) and 5(d):
     forward TFLOP/s on H100 80GB SXM5, BF16, head dim 128, 16k tokens per
     batch (batch = 16k / length), hidden 2048, 16 heads; FlashAttention-3's
     and cuDNN's bars, transcribed from the figure as the FlashAttention
     repository ships it (Dao-AILab/flash-attention assets/flash3_fp16_fwd.png,
     read at commit 0251105a). The paper gives the backward pass only without
     a mask (Fig. 6).
CUDNN NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/results/
     h200_919_only_cudnn/llama3.1_20260227_034703.csv (added in df73764,
     cuDNN Frontend v1.19.0 release notes, 2026-03-09; read at 3929da2):
     cuDNN 9.19.1 on an NVIDIA H200 (the H100's GH100 compute), BF16, Llama
     3.1 405B attention (64 query heads, 8 KV heads, head dim 128), batch 1,
     forward and backward, no mask and causal ('top_left'), 10 iterations.
     Its FLOP convention is FlashAttention's (causal counts the unmasked
     half), which is ptsim's.
FA2  FlashAttention-2 (Dao, arXiv 2307.08691) Fig. 4(b) and 4(d): forward +
     backward TFLOP/s on A100 80GB SXM4, head dim 128, 16k tokens per batch,
     hidden 2048, as the FlashAttention repository ships it
     (assets/flash2_a100_fwd_bwd_benchmark.png, read at commit 0251105a). Bar
     labels, each checked against its bar's height in pixels (1.839 pixels per
     TFLOP/s from the axis). Without a mask the 512 and 1k bars sit behind
     the legend, label and top both, so the table starts at 2k.
TRI  The same figure's FlashAttention Triton bars (Fig. 4(b) and 4(d)): the
     Triton kernel of the FlashAttention repository (flash_attn_triton.py),
     which llm-foundry's attn_impl: triton runs, forward + backward TFLOP/s,
     512 to 16k, without a mask (78 85 90 93 95 95) and causal (50 61 68 74
     78 80). Bar labels, each checked against its bar's height in pixels
     (1.84 pixels per TFLOP/s; the causal 4k and 8k bars read 72.9 and 76.7,
     within 1.5% of their labels).
FA2H FlashAttention-2's own H100 benchmark, released with it
     (Dao-AILab/flash-attention assets/flash2_h100_fwd_bwd_benchmark.png,
     added in 4f285b35, 2023-07-17; read at 0251105a): forward + backward
     TFLOP/s on H100 80GB SXM5, head dim 128, 16k tokens per batch, hidden
     2048, without a mask and causal, 512 to 16k. Bar labels, each checked
     against its bar's height in pixels (about 1.11 pixels per TFLOP/s).

Which table goes where, and why:
  H100 profiles (FA3 paper figures as their 16k efficiencies)
    flash forward   FA3 paper, FlashAttention-3 bars / 648
    cudnn forward   FA3 paper, cuDNN bars / 595
    both backward   cuDNN H200 backward / its 612: the only per-length
                    backward measurement on GH100; for FlashAttention-3 a
                    transfer from the other warp-specialized Hopper kernel
  H200 profile (whose 16k efficiencies are the cuDNN H200 figures)
    flash, both     cuDNN H200 / its 16k no-mask figures
  GB200 profile (whose 16k efficiencies are NVIDIA's GB200 run below, cuDNN
  9.22.0, the run of its FP8 figures)
    flash, both     cuDNN GB200 (CUDNN_GB200 below) / its 16k no-mask figures
  B200 and B300 profiles (FlashAttention-4's figures, no run by length)
    flash, both     the earlier cuDNN 9.19.1 GB200 run (CUDNN_GB200_919) / its
                    16k no-mask figures: cuDNN's shape on the same die
  GB300 profile (whose 16k efficiencies are NVIDIA's GB300 run below)
    flash, both     cuDNN GB300 (CUDNN_GB300 below) / its 16k no-mask figures
  GB200 and GB300 profiles, FP8 attention (fp8 and mxfp8: cuDNN's FP8
  kernels as Transformer Engine runs them, whose 16k figures they carry)
    fp8, mxfp8      the same GPU's FP8 rows (CUDNN_FP8 below) / their 16k
                    no-mask figures
  A100 profiles (whose 16k efficiencies are the FA2 paper's forward and
  backward maxima, head dim 128 without a mask at 16k)
    flash, both     FA2 forward + backward / its 16k no-mask figure (203):
                    one factor for both passes, so that their sum takes the
                    measured combined time at every length; how it splits
                    between the passes is not measured here
    flash2, both    the same: FlashAttention-2 is the A100's flash kernel
    triton, both    TRI forward + backward / its 16k no-mask figure (95),
                    one factor for both passes as for FlashAttention-2; no
                    other GPU has a published measurement of this kernel
  H100 and H200 profiles, FlashAttention-2 (flash2: the FA3 paper's
  FlashAttention-2 bars as their 16k efficiencies)
    flash2, both    FA2H forward + backward / its 16k no-mask figure (338),
                    one factor for both passes as on the A100
Lengths outside a table hold its end value (cost/compute_cost.cpp).

Head shapes (by_head_dim): the GB200 and GB300 profiles also carry, for the
query/key head dim 192 with value head dim 128 (DeepSeek-V3's multi-latent
attention as the kernel sees it), the flash, fp8 and mxfp8 tables of NVIDIA's
DeepSeek-V3 runs (DSV3 below); a task of that shape takes them in place of
its kernel's by_sequence tables. No other shape is measured by length on
these GPUs (gpt-oss's head dim 64 only under a window of 128).

usage: attention_sequence_factors.py [--check] [--head-dim GPU] [--verify-profiles DIR]
  --check                also print how the two sources' forward shapes compare
  --head-dim GPU         print GPU's (gb200, gb300) by_head_dim tables instead
  --verify-profiles DIR  exit 1 unless the profiles in DIR carry exactly
                         these tables (a guard against hand edits)
"""
import json
import sys

# FA3 paper Fig. 5(c) (no mask) and 5(d) (causal), head dim 128, TFLOP/s.
FA3_SEQ = [512, 1024, 2048, 4096, 8192, 16384]
FA3_FORWARD = {
    "flashattention3": {"full": [467, 565, 625, 638, 646, 648], "causal": [292, 423, 521, 579, 602, 616]},
    "cudnn": {"full": [497, 574, 617, 609, 600, 595], "causal": [315, 410, 484, 518, 529, 539]},
}

# cudnn-frontend H200 results, bfloat16 rows: (mask, length) -> (fwd, bwd) TFLOP/s.
CUDNN_H200 = {
    ("top_left", 32768): (688, 581), ("no_mask", 32768): (693, 572),
    ("top_left", 16384): (673, 579), ("no_mask", 16384): (702, 612),
    ("top_left", 8192): (644, 541), ("no_mask", 8192): (691, 594),
    ("top_left", 4096): (591, 474), ("no_mask", 4096): (671, 560),
    ("top_left", 2048): (484, 370), ("no_mask", 2048): (633, 504),
}
# The earlier GB200 run of the H200's run set (results/gb200_919_only_cudnn/
# llama3.1_20260226_174648.csv, added in df73764, removed in 50c8aeb 'Clean up
# old benchmarks'; cuDNN 9.19.1, batch 1), whose shape by length the B200 and
# B300 profiles carry (PROFILES below).
CUDNN_GB200_919 = {
    ("top_left", 32768): (1720, 1473), ("no_mask", 32768): (1781, 1501),
    ("top_left", 16384): (1687, 1402), ("no_mask", 16384): (1769, 1455),
    ("top_left", 8192): (1598, 1311), ("no_mask", 8192): (1709, 1409),
    ("top_left", 4096): (1335, 1132), ("no_mask", 4096): (1593, 1287),
    ("top_left", 2048): (1042, 836), ("no_mask", 2048): (1245, 1089),
}
# NVIDIA's GB200 run of the later run set (results/llama3.1/gb200/llama3.1_20260424_100750.csv,
# added in fb682ce, cuDNN Frontend v1.23.0 release notes, 2026-04-29; read at
# 3929da2): cuDNN 9.22.0, the same attention at batch 2, BF16, forward and the
# non-deterministic backward, whose 16k figures the gb200-nvl72 profile
# carries since 2026-12-05 (before, an earlier run's: results/gb200_919_only_cudnn/
# llama3.1_20260226_174648.csv, cuDNN 9.19.1, batch 1, 1769 and 1455 at 16k
# without a mask and 1335 and 1132 at 4k causal, which NVIDIA removed in
# 50c8aeb 'Clean up old benchmarks'); the same run as the profile's FP8
# figures and the GB300's.
CUDNN_GB200 = {
    ("top_left", 32768): (1622, 1226), ("no_mask", 32768): (1634, 1262),
    ("top_left", 16384): (1708, 1328), ("no_mask", 16384): (1697, 1374),
    ("top_left", 8192): (1574, 1332), ("no_mask", 8192): (1771, 1404),
    ("top_left", 4096): (1408, 1148), ("no_mask", 4096): (1599, 1350),
    ("top_left", 2048): (1097, 885), ("no_mask", 2048): (1433, 1124),
}
# NVIDIA's later run set on a GB300 (results/llama3.1/gb300/llama3.1_20260424_100757.csv,
# added in fb682ce, cuDNN Frontend v1.23.0 release notes, 2026-04-29; read
# at 3929da2): cuDNN 9.22.0, the same attention (64 query and 8 KV heads,
# head dim 128) at batch 2, BF16, forward and the non-deterministic backward
# (deterministic_bwd False, as the GB200 run above), whose 16k figures the
# gb300-nvl72 profile carries.
CUDNN_GB300 = {
    ("top_left", 32768): (1953, 1490), ("no_mask", 32768): (1836, 1427),
    ("top_left", 16384): (1915, 1507), ("no_mask", 16384): (2014, 1536),
    ("top_left", 8192): (1856, 1435), ("no_mask", 8192): (2017, 1531),
    ("top_left", 4096): (1703, 1248), ("no_mask", 4096): (1900, 1429),
    ("top_left", 2048): (1373, 967), ("no_mask", 2048): (1805, 1213),
}
# The same two runs' FP8 rows (fp8: per-tensor scales; mxfp8: MXFP8 blocks),
# TFLOP/s as the benchmark counts them, whose 16k no-mask figures over the
# fp8 peak (5000) are the profiles' fp8_ and mxfp8_ efficiencies: Transformer
# Engine's cuDNN FP8 attention (--fp8-dot-product-attention). GB200 from
# results/llama3.1/gb200/llama3.1_20260424_100750.csv (cuDNN 9.22.0, batch 2,
# the run of CUDNN_GB200 above).
CUDNN_FP8 = {
    "gb300": {
        "fp8": {
            ("top_left", 32768): (3108, 2128), ("no_mask", 32768): (3050, 2178),
            ("top_left", 16384): (3054, 2035), ("no_mask", 16384): (3182, 2177),
            ("top_left", 8192): (2897, 1781), ("no_mask", 8192): (3160, 2111),
            ("top_left", 4096): (2532, 1396), ("no_mask", 4096): (2988, 1839),
            ("top_left", 2048): (1954, 944), ("no_mask", 2048): (2728, 1390),
        },
        "mxfp8": {
            ("top_left", 32768): (2785, 1590), ("no_mask", 32768): (2814, 1654),
            ("top_left", 16384): (2727, 1563), ("no_mask", 16384): (2889, 1689),
            ("top_left", 8192): (2570, 1404), ("no_mask", 8192): (2870, 1636),
            ("top_left", 4096): (2272, 1143), ("no_mask", 4096): (2693, 1469),
            ("top_left", 2048): (1751, 811), ("no_mask", 2048): (2443, 1164),
        },
    },
    "gb200": {
        "fp8": {
            ("top_left", 32768): (2197, 1687), ("no_mask", 32768): (2223, 1825),
            ("top_left", 16384): (2154, 1632), ("no_mask", 16384): (2263, 1836),
            ("top_left", 8192): (2047, 1454), ("no_mask", 8192): (2241, 1772),
            ("top_left", 4096): (1805, 1178), ("no_mask", 4096): (2093, 1577),
            ("top_left", 2048): (1420, 831), ("no_mask", 2048): (1881, 1214),
        },
        "mxfp8": {
            ("top_left", 32768): (2046, 1425), ("no_mask", 32768): (2070, 1480),
            ("top_left", 16384): (1999, 1436), ("no_mask", 16384): (2103, 1554),
            ("top_left", 8192): (1902, 1287), ("no_mask", 8192): (2080, 1495),
            ("top_left", 4096): (1685, 1054), ("no_mask", 4096): (1944, 1344),
            ("top_left", 2048): (1330, 745), ("no_mask", 2048): (1754, 1069),
        },
    },
}
CUDNN_SEQ = [2048, 4096, 8192, 16384, 32768]
REFERENCE = 16384

# NVIDIA's DeepSeek-V3 attention runs of the same run set (results/dsv3/
# gb300/dsv3_20260424_101002.csv and results/dsv3/gb200/dsv3_20260424_101009.csv,
# added in fb682ce; read at 3929da2; configs/dsv3.py): cuDNN 9.22.0, 128
# query and 128 KV heads, query/key head dim 192, value head dim 128 (multi-
# latent attention as it reaches the kernel), batch 2, BF16, FP8 and MXFP8,
# forward and the non-deterministic backward, TFLOP/s as the benchmark counts
# them. They give the kernels' by_head_dim tables: the rate at each length and
# mask over the Llama attention's 16k no-mask rate of the same GPU's run at
# cuDNN 9.22.0 (LLAMA_922_REFERENCE: the CUDNN_GB200, CUDNN_GB300 and CUDNN_FP8
# figures above), so that each table multiplies the efficiency the profile
# carries for the kernel at the Llama shape.
DSV3 = {
    "gb300": {
        "flash": {
            ("top_left", 32768): (1991, 1289), ("no_mask", 32768): (1917, 1246),
            ("top_left", 16384): (1967, 1302), ("no_mask", 16384): (2032, 1254),
            ("top_left", 8192): (1825, 1291), ("no_mask", 8192): (2021, 1301),
            ("top_left", 4096): (1590, 1143), ("no_mask", 4096): (1937, 1267),
            ("top_left", 2048): (1285, 914), ("no_mask", 2048): (1770, 1117),
        },
        "fp8": {
            ("top_left", 32768): (3364, 2406), ("no_mask", 32768): (3362, 2466),
            ("top_left", 16384): (3305, 2459), ("no_mask", 16384): (3438, 2579),
            ("top_left", 8192): (3128, 2310), ("no_mask", 8192): (3400, 2509),
            ("top_left", 4096): (2788, 1982), ("no_mask", 4096): (3304, 2406),
            ("top_left", 2048): (2290, 1511), ("no_mask", 2048): (3058, 2099),
        },
        "mxfp8": {
            ("top_left", 32768): (2959, 1863), ("no_mask", 32768): (3063, 1948),
            ("top_left", 16384): (2998, 1844), ("no_mask", 16384): (3117, 2007),
            ("top_left", 8192): (2829, 1780), ("no_mask", 8192): (3108, 2027),
            ("top_left", 4096): (2517, 1522), ("no_mask", 4096): (3015, 1921),
            ("top_left", 2048): (2069, 1158), ("no_mask", 2048): (2758, 1665),
        },
    },
    "gb200": {
        "flash": {
            ("top_left", 32768): (1743, 1076), ("no_mask", 32768): (1584, 1086),
            ("top_left", 16384): (1678, 1134), ("no_mask", 16384): (1812, 1088),
            ("top_left", 8192): (1585, 1193), ("no_mask", 8192): (1759, 1125),
            ("top_left", 4096): (1406, 1057), ("no_mask", 4096): (1666, 1175),
            ("top_left", 2048): (1072, 846), ("no_mask", 2048): (1492, 1048),
        },
        "fp8": {
            ("top_left", 32768): (2447, 1857), ("no_mask", 32768): (2340, 1932),
            ("top_left", 16384): (2486, 1968), ("no_mask", 16384): (2590, 1989),
            ("top_left", 8192): (2397, 1959), ("no_mask", 8192): (2582, 2122),
            ("top_left", 4096): (2095, 1692), ("no_mask", 4096): (2518, 2071),
            ("top_left", 2048): (1659, 1312), ("no_mask", 2048): (2175, 1807),
        },
        "mxfp8": {
            ("top_left", 32768): (2329, 1532), ("no_mask", 32768): (2162, 1561),
            ("top_left", 16384): (2355, 1552), ("no_mask", 16384): (2492, 1638),
            ("top_left", 8192): (2219, 1494), ("no_mask", 8192): (2408, 1680),
            ("top_left", 4096): (1925, 1364), ("no_mask", 4096): (2316, 1675),
            ("top_left", 2048): (1535, 1047), ("no_mask", 2048): (2018, 1504),
        },
    },
}
DSV3_HEAD_DIM, DSV3_VALUE_HEAD_DIM = 192, 128
LLAMA_922_REFERENCE = {
    "gb300": {"flash": CUDNN_GB300[("no_mask", REFERENCE)], "fp8": CUDNN_FP8["gb300"]["fp8"][("no_mask", REFERENCE)],
              "mxfp8": CUDNN_FP8["gb300"]["mxfp8"][("no_mask", REFERENCE)]},
    "gb200": {"flash": CUDNN_GB200[("no_mask", REFERENCE)], "fp8": CUDNN_FP8["gb200"]["fp8"][("no_mask", REFERENCE)],
              "mxfp8": CUDNN_FP8["gb200"]["mxfp8"][("no_mask", REFERENCE)]},
}
# The benchmark counts a backward pass as 3·d_qk + 2·d_v multiply-adds per
# score (flops() in benchmark_single_sdpa.py: the recomputed scores, dQ and dK
# on d_qk; dP and dV on d_v); ptsim as 2.5·(d_qk + d_v) (2.5 times the
# forward, exact when the two are equal). Its backward rate at this shape is
# the benchmark's times this ratio, so that both give the measured time.
DSV3_BACKWARD_FLOPS = 2.5 * (DSV3_HEAD_DIM + DSV3_VALUE_HEAD_DIM) / (3 * DSV3_HEAD_DIM + 2 * DSV3_VALUE_HEAD_DIM)

# FA2 paper Fig. 4(b) (no mask) and 4(d) (causal), head dim 128, forward +
# backward TFLOP/s on A100 80GB SXM4, FlashAttention-2's bars.
FA2_SEQ = [2048, 4096, 8192, 16384]
FA2_A100 = {"full": [187, 196, 201, 203], "causal": [155, 173, 182, 189]}

# The same figure's FlashAttention Triton bars, 512 to 16k.
TRITON_A100_SEQ = [512, 1024, 2048, 4096, 8192, 16384]
TRITON_A100 = {"full": [78, 85, 90, 93, 95, 95], "causal": [50, 61, 68, 74, 78, 80]}

# FlashAttention-2's H100 benchmark, panels (b) (no mask) and (d) (causal),
# head dim 128, forward + backward TFLOP/s, FlashAttention-2's bars.
FA2_H100_SEQ = [512, 1024, 2048, 4096, 8192, 16384]
FA2_H100 = {"full": [248, 294, 320, 326, 335, 338], "causal": [163, 221, 265, 294, 308, 328]}


def rounded(values):
    return [round(v, 4) for v in values]


def fa3_forward(kernel):
    t = FA3_FORWARD[kernel]
    ref = t["full"][FA3_SEQ.index(REFERENCE)]
    return {"seq_lengths": FA3_SEQ, "full": rounded(v / ref for v in t["full"]),
            "causal": rounded(v / ref for v in t["causal"])}


def cudnn_run(run, pass_index, reference=None, flops_ratio=1.0):
    """A cudnn-frontend run's table for one pass: each rate (times flops_ratio, the
    benchmark's FLOP count over ptsim's) over the reference's 16k no-mask rate,
    by default the run's own."""
    ref = (reference or run[("no_mask", REFERENCE)])[pass_index]
    return {"seq_lengths": CUDNN_SEQ,
            "full": rounded(run[("no_mask", s)][pass_index] * flops_ratio / ref for s in CUDNN_SEQ),
            "causal": rounded(run[("top_left", s)][pass_index] * flops_ratio / ref for s in CUDNN_SEQ)}


def cudnn_h200(pass_index):
    return cudnn_run(CUDNN_H200, pass_index)


def fa2_table(seq, table):
    ref = table["full"][seq.index(REFERENCE)]
    return {"seq_lengths": seq, "full": rounded(v / ref for v in table["full"]),
            "causal": rounded(v / ref for v in table["causal"])}


def fa2_a100():
    return fa2_table(FA2_SEQ, FA2_A100)


def triton_a100():
    return fa2_table(TRITON_A100_SEQ, TRITON_A100)


def fa2_h100():
    return fa2_table(FA2_H100_SEQ, FA2_H100)


def head_dim_tables(gpu):
    shape = {"value_head_dim": DSV3_VALUE_HEAD_DIM}
    for kernel, run in DSV3[gpu].items():
        reference = LLAMA_922_REFERENCE[gpu][kernel]
        shape[kernel] = {"forward": cudnn_run(run, 0, reference),
                         "backward": cudnn_run(run, 1, reference, DSV3_BACKWARD_FLOPS)}
    return {str(DSV3_HEAD_DIM): shape}


def fp8_tables(gpu):
    return {kind: {"forward": cudnn_run(run, 0), "backward": cudnn_run(run, 1)}
            for kind, run in CUDNN_FP8[gpu].items()}


def tables():
    backward = cudnn_h200(1)
    return {
        "a100": {"flash": {"forward": fa2_a100(), "backward": fa2_a100()},
                 "flash2": {"forward": fa2_a100(), "backward": fa2_a100()},
                 "triton": {"forward": triton_a100(), "backward": triton_a100()}},
        "h100": {"flash": {"forward": fa3_forward("flashattention3"), "backward": backward},
                 "cudnn": {"forward": fa3_forward("cudnn"), "backward": backward},
                 "flash2": {"forward": fa2_h100(), "backward": fa2_h100()}},
        "h200": {"flash": {"forward": cudnn_h200(0), "backward": backward},
                 "flash2": {"forward": fa2_h100(), "backward": fa2_h100()}},
        "gb200": {"flash": {"forward": cudnn_run(CUDNN_GB200, 0), "backward": cudnn_run(CUDNN_GB200, 1)},
                  **fp8_tables("gb200")},
        "gb300": {"flash": {"forward": cudnn_run(CUDNN_GB300, 0), "backward": cudnn_run(CUDNN_GB300, 1)},
                  **fp8_tables("gb300")},
        "gb200-shape": {"flash": {"forward": cudnn_run(CUDNN_GB200_919, 0),
                                  "backward": cudnn_run(CUDNN_GB200_919, 1)}},
    }


PROFILES = {"a100-sxm4-80gb": "a100", "a100-sxm4-40gb": "a100", "dgx-a100-superpod": "a100", "h100-sxm5-80gb": "h100", "dgx-h100-superpod": "h100", "h100-roce-llama3": "h100",
            "h100-hbm2e-96gb-500w": "h100",
            "h200-sxm-141gb": "h200", "gb200-nvl72": "gb200", "gb300-nvl72": "gb300",
            # The B200 and B300 carry FlashAttention-4's 16k figures; no FA4
            # run by length and mask is published, so they take cuDNN's
            # Blackwell shape from the earlier GB200 run (the same GPU die;
            # CUDNN_GB200_919), as the Hopper profiles take cuDNN's backward
            # shape.
            # No FP8 attention is measured on them.
            "b200-sxm-180gb": "gb200-shape", "b300-sxm-288gb": "gb200-shape"}


# Profiles whose kernels were measured at other head shapes (by_head_dim).
HEAD_DIM_PROFILES = {"gb200-nvl72": "gb200", "gb300-nvl72": "gb300"}


def verify_profiles(directory, out):
    bad = 0
    for name, kind in PROFILES.items():
        path = f"{directory}/{name}.json"
        with open(path) as f:
            attention = json.load(f)["gpu"]["attention_efficiency"]
        if attention.get("by_sequence") != out[kind]:
            print(f"{path}: attention_efficiency.by_sequence differs from what this script computes "
                  f"({kind} tables); rerun it and copy its output", file=sys.stderr)
            bad += 1
        shapes = head_dim_tables(HEAD_DIM_PROFILES[name]) if name in HEAD_DIM_PROFILES else None
        if attention.get("by_head_dim") != shapes:
            print(f"{path}: attention_efficiency.by_head_dim differs from what this script computes "
                  f"(--head-dim {HEAD_DIM_PROFILES.get(name, 'none')}); rerun it and copy its output", file=sys.stderr)
            bad += 1
    return bad


def main():
    out = tables()
    args = sys.argv[1:]
    if "--verify-profiles" in args:
        i = args.index("--verify-profiles")
        if i + 1 >= len(args):
            sys.exit("--verify-profiles needs the profile directory, e.g. hw_profiles")
        bad = verify_profiles(args[i + 1], out)
        print(f"{len(PROFILES) - bad} of {len(PROFILES)} profiles carry the computed tables")
        sys.exit(1 if bad else 0)
    if "--head-dim" in args:
        i = args.index("--head-dim")
        if i + 1 >= len(args) or args[i + 1] not in DSV3:
            sys.exit(f"--head-dim needs one of {', '.join(DSV3)}")
        print(json.dumps(head_dim_tables(args[i + 1]), indent=1))
        return
    print(json.dumps(out, indent=1))
    if "--check" in sys.argv[1:]:
        paper, h200 = fa3_forward("cudnn"), cudnn_h200(0)
        for s in CUDNN_SEQ:
            if s in FA3_SEQ:
                i, j = FA3_SEQ.index(s), CUDNN_SEQ.index(s)
                print(f"cuDNN forward at {s}: paper full {paper['full'][i]:.3f} causal {paper['causal'][i]:.3f}; "
                      f"H200 full {h200['full'][j]:.3f} causal {h200['causal'][j]:.3f}", file=sys.stderr)


if __name__ == "__main__":
    main()

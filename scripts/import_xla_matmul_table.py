#!/usr/bin/env python3
"""Converts OpenXLA's measured matmul table into a ptsim measurement file.

OpenXLA ships GEMM throughputs it measured per GPU architecture in
xla/service/gpu/model/matmul_interpolator_data.h (Apache-2.0): for batch b
and m, n, k in {256, ..., 4096}, FLOP/s per data type. This script writes
the bf16 entries with b = 1 of one architecture as ptsim-measurements/1
GEMM kernels (time = 2·m·n·k / FLOP/s), marked unverified: ptsim did not
check their results. FP8 entries are left out: several exceed the dense
FP8 peak of the GPU (e.g. 2424 TFLOP/s at 4096³ on sm_90 against 1979), so
their FLOP convention is not the one ptsim uses.

usage: import_xla_matmul_table.py HEADER ARCH DEVICE_NAME SOURCE OUT
  HEADER       path to matmul_interpolator_data.h
  ARCH         its architecture key, e.g. sm_90 or sm_100_B200
  DEVICE_NAME  what to call the device, e.g. "NVIDIA H100 (OpenXLA table, sm_90)"
  SOURCE       where HEADER came from (repository, path, commit), recorded in the file
  OUT          the measurement file to write
"""
import json
import re
import sys


def parse(text, arch):
    body = text[text.index('R"pb(') + 5:text.rindex(')pb"')]
    starts = [(m.group(1), m.end()) for m in re.finditer(r'key: "([A-Za-z0-9_]+)"\s*value \{', body)]
    for i, (name, start) in enumerate(starts):
        if name != arch:
            continue
        end = starts[i + 1][1] if i + 1 < len(starts) else len(body)
        for e in re.finditer(r'entries \{\s*b: (\d+)\s*m: (\d+)\s*n: (\d+)\s*k: (\d+)\s*((?:flops \{[^}]*\}\s*)+)\}',
                             body[start:end]):
            b, m, n, k = map(int, e.group(1, 2, 3, 4))
            flops = {key.lower(): int(v) for key, v in re.findall(r'key: "([^"]+)" value: (\d+)', e.group(5))}
            yield b, m, n, k, flops
        return
    sys.exit(f"{arch}: no such architecture in the table")


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    header, arch, device, source, out = sys.argv[1:]
    kernels = []
    for b, m, n, k, flops in parse(open(header).read(), arch):
        rate = flops.get("bf16xbf16->bf16")
        if b != 1 or not rate:
            continue
        work = 2.0 * m * n * k
        t = work / rate
        kernels.append({"op": "gemm", "dtype": "bf16", "shape": {"m": m, "n": n, "k": k, "batch": 1},
                        "time_s": t, "min_s": t, "max_s": t, "flops": work,
                        "bytes": 2.0 * (m * k + k * n + m * n), "verified": False})
    kernels.sort(key=lambda x: (x["shape"]["m"], x["shape"]["n"], x["shape"]["k"]))
    doc = {"schema": "ptsim-measurements/1",
           "device": {"kind": "gpu", "name": device, "source": source},
           "date": "as published",
           "method": {"statistic": "as published by OpenXLA", "inputs": "unknown",
                      "note": "third-party measurements: one value per shape, results not checked by ptsim"},
           "kernels": kernels}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{out}: {len(kernels)} bf16 GEMMs of {arch}")


if __name__ == "__main__":
    main()

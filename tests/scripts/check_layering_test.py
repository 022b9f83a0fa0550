#!/usr/bin/env python3
"""scripts/check_layering.py fails where it should: on the shipped tree it
passes; with an engine file that includes a hardware header directly (the
skip-edge the engine once had), with an arrow the build does not link, and
with a cycle, it exits 1 naming the offence.

Usage: check_layering_test.py CHECK_LAYERING_PY SOURCE_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

script, source = sys.argv[1], sys.argv[2]


def run(root):
    return subprocess.run([sys.executable, script, root], capture_output=True, text=True)


def tree(tmp):
    root = os.path.join(tmp, "tree")
    for part in ("src", "include", "docs"):
        shutil.copytree(os.path.join(source, part), os.path.join(root, part))
    return root


shipped = run(source)
assert shipped.returncode == 0, shipped.stderr
with tempfile.TemporaryDirectory() as tmp:
    root = tree(tmp)
    with open(os.path.join(root, "src", "engine", "skip_edge.cpp"), "w") as f:
        f.write('#include "ptsim/hardware/cluster.hpp"\n')
    r = run(root)
    assert r.returncode == 1 and "engine → hardware is not an allowed arrow (src/engine/skip_edge.cpp:1)" in r.stderr, r.stderr
with tempfile.TemporaryDirectory() as tmp:
    root = tree(tmp)
    path = os.path.join(root, "docs", "layering.json")
    table = json.load(open(path))
    table["stages"]["cost"].append("engine")  # a cycle, and an arrow the build does not link
    json.dump(table, open(path, "w"))
    r = run(root)
    assert r.returncode == 1, r.stderr
    assert "has a cycle" in r.stderr, r.stderr
    assert "cost → engine is allowed in docs/layering.json but src/CMakeLists.txt does not link cost to engine" in r.stderr, r.stderr
print("check_layering_test: PASS")

#!/usr/bin/env python3
"""Checks ptsim's layering: every #include "ptsim/<stage>/..." in src/ and
include/ptsim/ follows an arrow of docs/layering.json, the arrows have no
cycle, and each follows src/CMakeLists.txt's DEPS (the stage's libraries,
directly or through theirs), so that the linker and the headers agree.

Usage: scripts/check_layering.py [SOURCE_DIR]   (exit 1 naming each offence)
"""
import json
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"ptsim/([a-z_]+)/([^"]+)"')
DEPS = re.compile(r"ptsim_add_stage\((\w+)(.*?)\)\s*$", re.S | re.M)


def stage_of(root, path):
    for base in ("src", os.path.join("include", "ptsim")):
        rel = os.path.relpath(path, os.path.join(root, base))
        if not rel.startswith(".."):
            parts = rel.split(os.sep)
            return parts[0] if len(parts) > 1 else None
    return None


def include_arrows(root):
    """(stage, included stage) -> [(file, line)] for every cross-stage include."""
    arrows = {}
    for base in ("src", os.path.join("include", "ptsim")):
        for dirpath, _, files in os.walk(os.path.join(root, base)):
            for name in sorted(files):
                if not name.endswith((".cpp", ".hpp", ".h", ".cu", ".cuh")):
                    continue
                path = os.path.join(dirpath, name)
                stage = stage_of(root, path)
                if stage is None:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) != stage:
                            arrows.setdefault((stage, m.group(1)), []).append(
                                (os.path.relpath(path, root), number))
    return arrows


def cmake_deps(root):
    """stage -> the ptsim stages its ptsim_add_stage(... DEPS ...) names."""
    with open(os.path.join(root, "src", "CMakeLists.txt"), encoding="utf-8") as f:
        text = f.read()
    deps = {}
    for m in re.finditer(r"ptsim_add_stage\((\w+)(.*?)\n\s*DEPS([^)]*)\)", text, re.S):
        deps[m.group(1)] = set(re.findall(r"ptsim::(\w+)", m.group(3)))
    cli = re.search(r"target_link_libraries\(ptsim_cli PUBLIC([^)]*)\)", text, re.S)
    if cli:
        deps["cli"] = set(re.findall(r"ptsim::(\w+)", cli.group(1)))
    return deps


def closure(deps, stage):
    seen, todo = set(), list(deps.get(stage, ()))
    while todo:
        s = todo.pop()
        if s not in seen:
            seen.add(s)
            todo.extend(deps.get(s, ()))
    return seen


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    with open(os.path.join(root, "docs", "layering.json"), encoding="utf-8") as f:
        table = json.load(f)
    if table.get("schema") != "ptsim-layering/1":
        print("check_layering: docs/layering.json: schema must be \"ptsim-layering/1\"", file=sys.stderr)
        return 1
    allowed = {stage: set(targets) for stage, targets in table["stages"].items()}
    problems = []
    # Every include follows an allowed arrow.
    for (stage, target), where in sorted(include_arrows(root).items()):
        if stage not in allowed:
            problems.append(f"{where[0][0]}:{where[0][1]}: stage '{stage}' is not in docs/layering.json")
        elif target not in allowed[stage]:
            files = ", ".join(f"{p}:{n}" for p, n in where[:3]) + (" …" if len(where) > 3 else "")
            problems.append(f"{stage} → {target} is not an allowed arrow ({files})")
    # The arrows have no cycle.
    state = {}

    def visit(s, path):
        state[s] = "open"
        for t in sorted(allowed.get(s, ())):
            if state.get(t) == "open":
                problems.append(f"docs/layering.json has a cycle: {' → '.join(path + [s, t])}")
            elif t not in state:
                visit(t, path + [s])
        state[s] = "done"

    for s in sorted(allowed):
        if s not in state:
            visit(s, [])
    # Each arrow follows the libraries the build links.
    deps = cmake_deps(root)
    for stage, targets in sorted(allowed.items()):
        if stage not in deps:
            continue  # an executable's folder (mpi, microbench): its own CMake
        reachable = closure(deps, stage)
        for t in sorted(targets - reachable):
            problems.append(f"{stage} → {t} is allowed in docs/layering.json but src/CMakeLists.txt does not "
                            f"link {stage} to {t}")
    if problems:
        for p in problems:
            print(f"check_layering: {p}", file=sys.stderr)
        return 1
    arrows = sum(len(t) for t in allowed.values())
    print(f"check_layering: {len(allowed)} stages, {arrows} allowed arrows; every include follows one")
    return 0


if __name__ == "__main__":
    sys.exit(main())

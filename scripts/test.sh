#!/usr/bin/env bash
# Builds ptsim if needed (scripts/setup.sh) and runs the whole test suite.
# Takes the same PTSIM_* variables as scripts/setup.sh; arguments go to ctest
# (e.g. -LE reading leaves out the tests labelled reading).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
ctest --test-dir "${PTSIM_BUILD_DIR:-$root/build}" --output-on-failure -j "$(nproc)" "$@"

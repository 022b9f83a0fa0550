#!/usr/bin/env bash
# The multi-threaded code under ThreadSanitizer, in a build of its own
# (build-tsan/): the planner's thread pool (ptsim plan, sweep, report and the
# validator all run it) through the [plan] test cases but the slow one — the
# brute-force comparison, pruning, and sharded searches at 1, 2 and 4 threads.
#   scripts/tsan.sh            # build and run
#   scripts/tsan.sh "[plan]"   # another Catch2 filter
set -euo pipefail
cd "$(dirname "$0")/.."
build="${PTSIM_TSAN_BUILD_DIR:-build-tsan}"
filter="${1:-[plan]~[slow]}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPTSIM_TSAN=ON \
    -DPTSIM_BUILD_MICROBENCH=OFF -DPTSIM_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$build" --target ptsim_tests ptsim
TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}" "$build/tests/ptsim_tests" "$filter"

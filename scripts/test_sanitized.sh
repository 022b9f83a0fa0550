#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer, in the
# Clang build the fuzzers use (build-fuzz/, scripts/fuzz.sh): every library
# there is already instrumented with both, so one build serves the sanitized
# suite and the fuzzers, and CI compiles ptsim twice instead of three times.
# Arguments go to ctest, e.g.
#   scripts/test_sanitized.sh -LE "reading|sweep|determinism"   # CI: less the long readings, the sweep and the determinism check
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fuzz.sh --with-tests --build-only
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}" \
  UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
  ctest --test-dir "${PTSIM_FUZZ_BUILD_DIR:-build-fuzz}" --output-on-failure -j "$(nproc)" "$@"

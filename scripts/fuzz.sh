#!/usr/bin/env bash
# Builds ptsim's libFuzzer targets with Clang (ASan + UBSan, in build-fuzz/)
# and fuzzes each reader for a while, starting from its seed corpus in
# fuzz/corpus/TARGET/ and every past finding in fuzz/regressions/TARGET/.
#
#   scripts/fuzz.sh                      # every target, 60 s each
#   scripts/fuzz.sh --seconds 600 fuzz_model fuzz_cli
#   scripts/fuzz.sh --seconds 10         # CI: a short run per target
#   scripts/fuzz.sh --grow --seconds 900 # keep new coverage: merged into fuzz/corpus/
#   scripts/fuzz.sh --replay             # only run the corpora and regressions once
#   scripts/fuzz.sh --rounds 3 --seconds 300  # three 5-minute rounds per target, coverage
#                                        # after each: a plateau shows when to stop
#   scripts/fuzz.sh --with-tests --build-only  # the same build with the test suite, fuzzing
#                                        # nothing (scripts/test_sanitized.sh runs the suite in it)
#
# A crash leaves its input in build-fuzz/findings/; once fixed, copy it to
# fuzz/regressions/TARGET/ so that every later run replays it. Exit status is
# non-zero when any target finds a crash, a leak, a timeout or an uncaught exception.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${PTSIM_FUZZ_BUILD_DIR:-build-fuzz}"
seconds=60
grow=0
replay=0
rounds=1
with_tests=0
build_only=0
targets=()
all=(fuzz_model fuzz_hf_config fuzz_hardware fuzz_strategy fuzz_runs fuzz_measurements fuzz_nccl_tests fuzz_cli fuzz_merge)
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --grow) grow=1; shift ;;
    --replay) replay=1; shift ;;
    --rounds) rounds="$2"; shift 2 ;;
    --with-tests) with_tests=1; shift ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    fuzz_*) targets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (targets: ${all[*]})" >&2; exit 2 ;;
  esac
done
((${#targets[@]})) || targets=("${all[@]}")

if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found; scripts/setup.sh installs it (Debian package clang)" >&2
  exit 2
fi
# Configured once; --with-tests adds the test suite to it (and a later run
# without the flag keeps it).
if [ ! -f "$build/build.ninja" ] || [ "$with_tests" = 1 ]; then
  tests=OFF
  [ "$with_tests" = 1 ] && tests=ON
  cmake -S . -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPTSIM_FUZZ=ON -DPTSIM_BUILD_TESTS="$tests" \
    -DPTSIM_BUILD_MICROBENCH=OFF -DPTSIM_BUILD_BENCH=OFF -DPTSIM_WITH_MPI="$tests" >/dev/null
fi
if [ "$with_tests" = 1 ]; then
  cmake --build "$build" -j "$(nproc)"
else
  cmake --build "$build" --target "${targets[@]}"
fi
[ "$build_only" = 1 ] && exit 0

mkdir -p "$build/findings"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
for t in "${targets[@]}"; do
  seeds="fuzz/corpus/$t"
  regressions="fuzz/regressions/$t"
  mkdir -p "$regressions"
  work="$build/corpus/$t"
  mkdir -p "$work"
  flags=(-dict=fuzz/json.dict -timeout=10 -rss_limit_mb=2048 -max_len=65536
         -artifact_prefix="$build/findings/$t-" -print_final_stats=1)
  [ "$t" = fuzz_cli ] && flags=("${flags[@]/-dict=fuzz\/json.dict/-dict=fuzz/cli.dict}")
  [ "$t" = fuzz_nccl_tests ] && flags=("${flags[@]/-dict=fuzz\/json.dict/-dict=fuzz/nccl.dict}")
  if [ "$replay" = 1 ]; then
    echo "== $t: replaying $(find "$seeds" "$regressions" -type f | wc -l) inputs"
    "$build/fuzz/$t" "${flags[@]}" -runs=0 "$seeds" "$regressions" || status=1
    continue
  fi
  echo "== $t: ${rounds} x ${seconds}s"
  : >"$build/$t.log"
  for ((round = 1; round <= rounds; round++)); do
    if ! "$build/fuzz/$t" "${flags[@]}" -max_total_time="$seconds" "$work" "$seeds" "$regressions" \
        2>>"$build/$t.log"; then
      status=1
      echo "   FINDING — see $build/$t.log and $build/findings/" >&2
      break
    fi
    # The last status line: executions, coverage (edges), features, corpus size.
    echo "   round $round: $(grep -E "^#[0-9]+" "$build/$t.log" | tail -1)"
  done
  if [ "$grow" = 1 ]; then
    # Keep only inputs that add coverage to the committed seeds.
    "$build/fuzz/$t" -merge=1 "${flags[@]}" "$seeds" "$work" 2>>"$build/$t.log" >/dev/null
  fi
done
exit "$status"

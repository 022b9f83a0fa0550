#!/usr/bin/env bash
# Installs ptsim's build dependencies from Debian (only those missing) and
# builds ptsim. Safe to run again: it installs nothing twice and rebuilds only
# what changed.
#   PTSIM_BUILD_DIR   build directory (default: build/ in the source tree)
#   PTSIM_BUILD_TYPE  CMake build type (default: Release)
#   PTSIM_WERROR      ON to treat warnings as errors (CI)
#   PTSIM_SANITIZE    ON to build with AddressSanitizer + UBSan (CI)
#   PTSIM_BENCHMARKS  OFF to skip the micro-benchmarks (CUDA, CPU) and the
#                     engine's Google Benchmark suite, which no test runs
#                     (CI's sanitizer build); default ON
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
packages=(g++ cmake ninja-build libboost-graph-dev libboost-program-options-dev
          nlohmann-json3-dev libfmt-dev libyaml-cpp-dev catch2 libbenchmark-dev clang libopenblas-dev python3 openmpi-bin libopenmpi-dev
          python3-matplotlib chromium valgrind clang-format)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "ptsim setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

build_dir="${PTSIM_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build_dir" -G Ninja \
  -DCMAKE_BUILD_TYPE="${PTSIM_BUILD_TYPE:-Release}" \
  -DPTSIM_WERROR="${PTSIM_WERROR:-OFF}" \
  -DPTSIM_SANITIZE="${PTSIM_SANITIZE:-OFF}" \
  -DPTSIM_BUILD_MICROBENCH="${PTSIM_BENCHMARKS:-ON}" -DPTSIM_BUILD_BENCH="${PTSIM_BENCHMARKS:-ON}" \
  -DPTSIM_WITH_MPI=ON > /dev/null
cmake --build "$build_dir" -j "$(nproc)"

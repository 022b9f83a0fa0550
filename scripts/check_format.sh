#!/usr/bin/env bash
# Fails when the C++ lines changed since BASE are not as .clang-format lays
# them out (Debian's clang-format 14 through git clang-format: only the
# changed lines are checked, so older code keeps its layout until touched).
#   scripts/check_format.sh [BASE]   (default: the parent of HEAD; nothing to
#                                     check on a repository of one commit)
# Prints the diff that would fix them; `git clang-format BASE` applies it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tool="$(command -v git-clang-format-14 || command -v git-clang-format || true)"
[ -n "$tool" ] || { echo "check_format: git-clang-format not found (apt-get install clang-format; scripts/setup.sh installs it)" >&2; exit 2; }
base="${1:-HEAD~1}"
if ! git rev-parse --verify -q "$base^{commit}" > /dev/null; then
  echo "check_format: no $base to compare with; nothing to check"
  exit 0
fi
binary="$(command -v clang-format-14 || command -v clang-format)"
out="$("$tool" --binary "$binary" --diff --extensions cpp,hpp,h,cu,cuh "$base" -- src include tests bench fuzz 2>&1 || true)"
if grep -q '^diff --git\|^@@' <<< "$out"; then
  echo "$out"
  echo "check_format: lines changed since $base are not laid out as .clang-format says; run: git clang-format $base" >&2
  exit 1
fi
echo "check_format: the C++ lines changed since $(git rev-parse --short "$base") follow .clang-format"

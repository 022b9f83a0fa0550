#!/usr/bin/env bash
# The README's "What you get" block is what its set-up command's simulation
# prints today: the command is taken from the README itself (the part after
# `scripts/setup.sh && `), run from the source tree, and its output compared
# with the block byte for byte.
#   tests/cli/readme_output_test.sh PTSIM_BINARY
set -euo pipefail
ptsim="$1"
readme=README.md
command=$(grep -m1 '^scripts/setup.sh && build/ptsim simulate ' "$readme" | sed 's|^scripts/setup.sh && build/ptsim ||')
if [ -z "$command" ]; then
  echo "readme_output_test: no 'scripts/setup.sh && build/ptsim simulate …' line in $readme" >&2
  exit 1
fi
expected=$(awk '/^## What you get/{in_section=1; next} in_section && /^```/{if (in_block) exit; in_block=1; next} in_block' "$readme")
# shellcheck disable=SC2086  # the README's flags, split as a shell would
actual=$("$ptsim" $command)
if [ "$expected" != "$actual" ]; then
  echo "readme_output_test: README.md's 'What you get' block differs from what 'ptsim $command' prints:" >&2
  diff <(printf '%s\n' "$expected") <(printf '%s\n' "$actual") >&2 || true
  exit 1
fi
echo "readme_output_test: the README's output block matches ptsim $command"

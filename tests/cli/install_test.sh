#!/usr/bin/env bash
# An installed ptsim (cmake --install) runs from any directory on the files
# it installed under share/ptsim, not on the source tree it was built from:
# validate's default profiles, report's default error bands, the report
# renderer beside bin/ptsim.
#   tests/cli/install_test.sh BUILD_DIR
set -euo pipefail
build="$(cd "$1" && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
share="$prefix/share/ptsim"
for f in hw_profiles/dgx-h100-superpod.json configs/models/tiny.json validation/software.json \
         validation/error_bands.json validation/heldout_runs.json configs/stacks/megatron-core.json; do
  [ -f "$share/$f" ] || { echo "FAIL: $share/$f was not installed" >&2; exit 1; }
done
[ -x "$prefix/bin/render_report.py" ] || { echo "FAIL: bin/render_report.py was not installed" >&2; exit 1; }
mkdir "$work/elsewhere"
cd "$work/elsewhere"

# The first held-out run, validated on the installed profiles (its file and
# profile are the installed ones; validate finds profiles by name).
python3 - "$share/validation/heldout_runs.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))
runs["runs"] = runs["runs"][:1]
json.dump(runs, open("one_run.json", "w"))
PY
"$prefix/bin/ptsim" validate --runs one_run.json --json validate.json > /dev/null
python3 - <<'PY'
import json
runs = json.load(open("validate.json"))["runs"]
assert len(runs) == 1 and runs[0]["predicted_step_time_s"] > 0, runs
PY

# With its installed profile gone, validate names the installed path: it read
# share/ptsim/hw_profiles, not the source tree's (which still has the file).
profile=$(python3 -c 'import json; print(json.load(open("one_run.json"))["runs"][0]["hardware"])')
[ -f "$share/hw_profiles/$profile.json" ] || { echo "FAIL: $profile.json was not installed" >&2; exit 1; }
rm "$share/hw_profiles/$profile.json"
if "$prefix/bin/ptsim" validate --runs one_run.json > out.txt 2>&1; then
  echo "FAIL: validate passed without the profile $profile" >&2; exit 1
fi
grep -q "$share/hw_profiles/$profile.json" out.txt ||
  { echo "FAIL: validate does not name $share/hw_profiles/$profile.json:" >&2; cat out.txt >&2; exit 1; }

# --stack NAME: the installed stack, whatever the working directory.
"$prefix/bin/ptsim" simulate --model "$share/configs/models/tiny.json" --hw "$share/hw_profiles/dgx-h100-superpod.json" \
    --gpus 8 --global-batch-size 16 --stack megatron-lm-2021 > /dev/null ||
  { echo "FAIL: simulate --stack megatron-lm-2021 did not find the installed stack" >&2; exit 1; }

# report: the installed error bands, and the renderer found beside bin/ptsim.
"$prefix/bin/ptsim" report --model "$share/configs/models/tiny.json" --hw "$share/hw_profiles/dgx-h100-superpod.json" \
    --tokens 1e9 --gpus 8 --global-batch-size 16 --out report --no-render --quiet > /dev/null
python3 - "$share" <<'PY'
import json, sys
bands = json.load(open("report/report.json"))["validated_error"]["bands_file"]
assert bands == sys.argv[1] + "/validation/error_bands.json", bands
PY
echo "installed ptsim: defaults read from $share"

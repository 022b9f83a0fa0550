"""What the readings (scripts/*_reading.py) share: their flags, running ptsim over the rows, the summary line and the bound.

A reading sets ptsim against measured runs kept outside the validation files and, with
--max-median-error, is a drift guard in the test suite (tests/CMakeLists.txt).
"""
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile


def add_common_arguments(ap, root, median_of):
    """--ptsim, --jobs and --max-median-error; `median_of` names the rows the bound reads."""
    ap.add_argument("--ptsim", default=os.path.join(root, "build", "ptsim"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--max-median-error", type=float, metavar="PCT",
                    help=f"exit 4 when the median |error| of {median_of} exceeds PCT (a drift guard)")


def require_ptsim(path):
    if not os.path.exists(path):
        sys.exit(f"{path}: no ptsim binary; build it first (scripts/setup.sh)")


def summary(label, errors):
    """One line: rows, median |error|, signed median, worst, rows within 10%."""
    return (f"{label}: {len(errors)} rows, median |error| {statistics.median(abs(e) for e in errors):.1f}%, "
            f"signed median {statistics.median(errors):+.1f}%, worst {max(errors, key=abs):+.1f}%, "
            f"within 10%: {sum(abs(e) <= 10 for e in errors)}")


def simulated_step_s(cmd, out_path, what):
    """Runs `ptsim simulate` (cmd, which writes its JSON report to out_path) and returns its step
    time in seconds; a failure stops the reading, naming `what` it was simulating."""
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"ptsim failed on {what} (exit {done.returncode}): {done.stderr.strip()}\n  {' '.join(cmd)}")
    with open(out_path) as f:
        return json.load(f)["step_time_s"]


def simulate_all(rows, simulate_row, jobs):
    """simulate_row(index, row, scratch_dir) for every row, `jobs` at a time, in the rows' order."""
    with tempfile.TemporaryDirectory() as scratch, concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(lambda ir: simulate_row(ir[0], ir[1], scratch), enumerate(rows)))


def enforce_median_bound(errors, bound, what, script):
    """With --max-median-error set (`bound`), exit 4 when the median |error| of `errors` exceeds it."""
    if bound is None:
        return
    median = statistics.median(abs(e) for e in errors)
    if median > bound:
        print(f"{script}: {what} median |error| {median:.2f}% exceeds --max-median-error {bound:g}%", file=sys.stderr)
        sys.exit(4)

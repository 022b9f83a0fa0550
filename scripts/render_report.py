#!/usr/bin/python3
# Debian's own python3: it carries Debian's python3-matplotlib (scripts/setup.sh installs both).
"""Renders a ptsim capacity report (report.json, schema "ptsim-capacity-report/1").

    render_report.py REPORT_JSON OUT_DIR

Writes into OUT_DIR four plots (scaling.png, breakdown.png, memory.png, timeline.png), report.md
(which links them) and report.html (self-contained: the plots are embedded as data: URIs, no
scripts, no external resources). The output is byte-for-byte the same for the same input.

`ptsim report --out DIR` runs it with Debian's /usr/bin/python3 and python3-matplotlib.

Exit status: 0 on success, 2 when REPORT_JSON cannot be read or does not match the schema (the
message names the offending key), 3 when matplotlib is missing.
"""

import base64
import html
import json
import math
import os
import re
import sys
import tempfile

SCHEMA = "ptsim-capacity-report/1"
PROG = "render_report.py"

# Plot files and the ids of their <img> elements in report.html, in report order.
PLOTS = [
    ("scaling", "scaling.png", "plot-scaling", "Time to train and MFU against GPU count"),
    ("breakdown", "breakdown.png", "plot-breakdown", "Step time breakdown of the best strategy at each scale"),
    ("memory", "memory.png", "plot-memory", "Memory per pipeline stage of the best strategy at each scale"),
    ("timeline", "timeline.png", "plot-timeline", "Timeline excerpt of one step of the fastest point"),
]

DASH = "\u2014"  # shown for missing optional values

BREAKDOWN_ORDER = ["compute", "exposed_communication", "pipeline_bubble", "optimizer"]
BREAKDOWN_COLORS = {
    "compute": "#4C72B0",
    "exposed_communication": "#DD8452",
    "pipeline_bubble": "#C44E52",
    "optimizer": "#8172B3",
}
CATEGORY_ORDER = ["forward", "backward", "recompute", "optimizer", "tp", "pp", "dp", "cp", "ep"]
CATEGORY_COLORS = {
    "forward": "#4C72B0",
    "backward": "#55A868",
    "recompute": "#8DA0CB",
    "optimizer": "#8172B3",
    "tp": "#DD8452",
    "pp": "#C44E52",
    "dp": "#937860",
    "cp": "#DA8BC3",
    "ep": "#CCB974",
}
EXTRA_COLORS = ["#64B5CD", "#8C8C8C", "#B3DE69", "#FDB462", "#BC80BD", "#FFED6F"]
STREAM_ORDER = ["compute", "tp", "cp", "cp_send", "cp_recv", "ep", "pp_send_forward", "pp_recv_forward",
                "pp_send_backward", "pp_recv_backward", "embedding_grad", "dp"]
GIB = float(1 << 30)
MAX_TIMELINE_RANKS = 8  # the timeline plot shows at most this many of the report's ranks


class ReportError(Exception):
    """A report.json that does not match the schema; the message names where."""


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------

def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _type_name(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if _is_number(v):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def _require(obj, key, where, kind, nullable=False, optional=False):
    """Returns obj[key] after checking its type. kind: 'number', 'int', 'string', 'bool', 'object',
    'array'. nullable: null allowed. optional: the key may be absent (read as null)."""
    if key not in obj:
        if optional:
            return None
        raise ReportError("missing top-level key '%s'" % key if where == "report"
                          else f"{where}: missing key '{key}'")
    v = obj[key]
    path = f"{where}.{key}" if where != "report" else key
    if v is None:
        if nullable:
            return None
        raise ReportError(f"{path}: must not be null")
    ok = {
        "number": _is_number(v) and math.isfinite(v),
        "int": isinstance(v, int) and not isinstance(v, bool),
        "string": isinstance(v, str),
        "bool": isinstance(v, bool),
        "object": isinstance(v, dict),
        "array": isinstance(v, list),
    }[kind]
    if not ok:
        want = {"number": "a finite number", "int": "an integer", "string": "a string",
                "bool": "true or false", "object": "an object", "array": "an array"}[kind]
        raise ReportError(f"{path}: expected {want}, got {_type_name(v)}")
    return v


def validate(report):
    """Raises ReportError unless report matches "ptsim-capacity-report/1"."""
    if not isinstance(report, dict):
        raise ReportError(f"top level: expected an object, got {_type_name(report)}")
    schema = _require(report, "schema", "report", "string")
    if schema != SCHEMA:
        raise ReportError(f"schema: '{schema}' is not supported (expected '{SCHEMA}')")
    _require(report, "model", "report", "string")
    if _require(report, "tokens", "report", "number") <= 0:
        raise ReportError("tokens: must be positive")
    _require(report, "global_batch_size", "report", "int")
    _require(report, "seq_length", "report", "int")
    # Optional inputs: null (or absent) when not given to ptsim report.
    for key in ("days", "price_per_gpu_hour", "gpu_power_watts", "power_limit_W"):
        _require(report, key, "report", "number", nullable=True, optional=True)

    points = _require(report, "points", "report", "array")
    if not points:
        raise ReportError("points: empty (expected one point per hardware and GPU count)")
    seen = set()
    for i, p in enumerate(points):
        where = f"points[{i}]"
        if not isinstance(p, dict):
            raise ReportError(f"{where}: expected an object, got {_type_name(p)}")
        hw = _require(p, "hardware", where, "string")
        gpus = _require(p, "gpus", where, "int")
        if gpus <= 0:
            raise ReportError(f"{where}.gpus: must be positive")
        if (hw, gpus) in seen:
            raise ReportError(f"{where}: a second point for {hw} with {gpus} GPUs")
        seen.add((hw, gpus))
        if not _require(p, "fits", where, "bool"):
            _require(p, "reason", where, "string")
            continue
        _require(p, "gpu", where, "string")
        _require(p, "label", where, "string")
        _require(p, "strategy", where, "object")
        if _require(p, "step_time_s", where, "number") <= 0:
            raise ReportError(f"{where}.step_time_s: must be positive")
        for key in ("mfu", "tokens_per_s", "time_to_train_s", "time_to_train_days", "gpu_hours",
                    "capacity_bytes"):
            _require(p, key, where, "number")
        _require(p, "steps", where, "number")  # a count, though it may be written as 95368.0
        _require(p, "cost_usd", where, "number", nullable=True, optional=True)
        _require(p, "energy_mwh", where, "number", nullable=True, optional=True)
        _require(p, "meets_deadline", where, "bool", nullable=True, optional=True)
        breakdown = _require(p, "breakdown_s", where, "object")
        for key in BREAKDOWN_ORDER:
            _require(breakdown, key, f"{where}.breakdown_s", "number")
        for key in breakdown:
            _require(breakdown, key, f"{where}.breakdown_s", "number")
        stages = _require(p, "stages", where, "array")
        if not stages:
            raise ReportError(f"{where}.stages: empty (expected one entry per pipeline stage)")
        for j, s in enumerate(stages):
            sw = f"{where}.stages[{j}]"
            if not isinstance(s, dict):
                raise ReportError(f"{sw}: expected an object, got {_type_name(s)}")
            _require(s, "stage", sw, "int")
            for key in ("peak_bytes", "static_bytes", "activations_peak_bytes"):
                _require(s, key, sw, "number")

    validated = _require(report, "validated_error", "report", "object", optional=True)
    if validated is not None:
        _require(validated, "source", "validated_error", "string")
        for i, g in enumerate(_require(validated, "gpus", "validated_error", "array")):
            gw = f"validated_error.gpus[{i}]"
            if not isinstance(g, dict):
                raise ReportError(f"{gw}: expected an object, got {_type_name(g)}")
            _require(g, "gpu", gw, "string")
            runs = _require(g, "runs", gw, "int")
            if runs < 0:
                raise ReportError(f"{gw}.runs: must not be negative")
            if runs > 0:
                for key in ("median_abs_error_pct", "min_error_pct", "max_error_pct"):
                    _require(g, key, gw, "number")
                _require(g, "runs_predicted_short", gw, "int")

    timeline = _require(report, "timeline", "report", "object", nullable=True, optional=True)
    if timeline is not None:
        where = "timeline"
        _require(timeline, "hardware", where, "string")
        _require(timeline, "gpus", where, "int")
        _require(timeline, "label", where, "string")
        window = _require(timeline, "window_s", where, "array")
        if len(window) != 2 or not all(_is_number(v) and math.isfinite(v) for v in window) \
                or window[1] <= window[0]:
            raise ReportError("timeline.window_s: expected [start, end] with end > start")
        ranks = _require(timeline, "ranks", where, "array")
        for i, r in enumerate(ranks):
            rw = f"timeline.ranks[{i}]"
            if not isinstance(r, dict):
                raise ReportError(f"{rw}: expected an object, got {_type_name(r)}")
            _require(r, "rank", rw, "int")
            _require(r, "stage", rw, "int")
            events = _require(r, "events", rw, "array")
            for j, e in enumerate(events):
                ew = f"{rw}.events[{j}]"
                if not isinstance(e, dict):
                    raise ReportError(f"{ew}: expected an object, got {_type_name(e)}")
                _require(e, "stream", ew, "string")
                _require(e, "category", ew, "string")
                start = _require(e, "start_s", ew, "number")
                end = _require(e, "end_s", ew, "number")
                if end < start:
                    raise ReportError(f"{ew}: end_s {end} is before start_s {start}")


def load_report(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ReportError(f"cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ReportError("not UTF-8 text") from None

    def no_constants(name):
        raise ReportError(f"{name} is not valid JSON (numbers must be finite)")

    try:
        report = json.loads(text, parse_constant=no_constants)
    except json.JSONDecodeError as e:
        raise ReportError(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    validate(report)
    return report


# --------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------

def fmt_count(v):
    return f"{v:,.0f}"


def fmt_step(v):
    if v >= 100:
        return f"{v:,.0f} s"
    if v >= 1:
        return f"{v:.2f} s"
    return f"{v * 1000:.1f} ms"


def fmt_days(v):
    return f"{v:,.1f}" if v >= 10 else f"{v:.2f}"


def fmt_money(v):
    return DASH if v is None else f"${v:,.0f}"


def fmt_energy(v):
    if v is None:
        return DASH
    return f"{v:,.1f} MWh" if v >= 1 else f"{v * 1000:,.1f} kWh"


def fmt_deadline(v):
    if v is None:
        return DASH
    return "yes" if v else "no"


def fmt_tokens(v):
    for div, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if v >= div:
            return f"{v / div:g}{unit}"
    return f"{v:,.0f}"


def hardware_names(points):
    """hardware -> 'hardware (GPU)', in sorted order."""
    names = {}
    for p in sorted(points, key=lambda p: p["hardware"]):
        hw = p["hardware"]
        if p["fits"] and p.get("gpu"):
            names[hw] = f"{hw} ({p['gpu']})"
        else:
            names.setdefault(hw, hw)
    return names


def table_rows(report):
    """Rows of the points table: a list of lists of strings."""
    rows = []
    for p in report["points"]:
        if p["fits"]:
            rows.append([fmt_count(p["gpus"]), p["hardware"], p["label"], fmt_step(p["step_time_s"]),
                         f"{p['mfu'] * 100:.1f}%", fmt_days(p["time_to_train_days"]),
                         fmt_count(p["gpu_hours"]), fmt_money(p.get("cost_usd")),
                         fmt_energy(p.get("energy_mwh")), fmt_deadline(p.get("meets_deadline"))])
        else:
            rows.append([fmt_count(p["gpus"]), p["hardware"], f"does not fit: {p['reason']}",
                         DASH, DASH, DASH, DASH, DASH, DASH, DASH])
    return rows


def error_band_lines(report):
    """How far to trust the figures: (GPU, sentence) for each GPU the report shows, from
    docs/accuracy.md's validated error bands, which ptsim report copies into the report."""
    validated = report.get("validated_error")
    if validated is None:
        return [("every GPU", "this report.json carries no validated error band (written by a ptsim "
                              "without one); see docs/accuracy.md")]
    lines = []
    for g in validated["gpus"]:
        if g["runs"] == 0:
            lines.append((g["gpu"], "no published run on this GPU validates ptsim: its error is unknown"))
        else:
            lines.append((g["gpu"], f"step times within a median {g['median_abs_error_pct']:.1f}% of "
                                    f"{g['runs']} published runs on this GPU, from "
                                    f"{g['min_error_pct']:+.1f}% to {g['max_error_pct']:+.1f}%; too short on "
                                    f"{g['runs_predicted_short']} of {g['runs']}"))
    return lines


ERROR_BAND_NOTE = ("Error is predicted against measured step time, negative when ptsim is too short. The runs "
                   "include ptsim's calibration set; on published runs outside it ptsim has predicted shorter "
                   "steps still. Source: ")


TABLE_HEADER = ["GPUs", "hardware", "best strategy", "step time", "MFU", "days to train", "GPU-hours",
                "cost", "energy", "deadline met"]
NUMERIC_COLUMNS = {0, 3, 4, 5, 6, 7, 8}


def summary_lines(report):
    days = report.get("days")
    price = report.get("price_per_gpu_hour")
    watts = report.get("gpu_power_watts")
    lines = [
        ("model", report["model"]),
        ("tokens", f"{fmt_tokens(report['tokens'])} ({report['tokens']:.3g})"),
        ("global batch", f"{report['global_batch_size']:,} sequences of {report['seq_length']:,} tokens"),
        ("deadline", DASH if days is None else f"{days:g} days"),
        ("price", DASH if price is None else f"${price:g} per GPU-hour"),
        ("GPU power", DASH if watts is None else f"{watts:g} W"),
    ]
    limit = report.get("power_limit_W")
    if limit is not None:
        lines.append(("power limit", f"every GPU held to {limit:g} W (a what-if: the validated error bands below "
                                     "were measured at each GPU's own limit, and under a lower one ptsim errs fast)"))
    fitting = [p for p in report["points"] if p["fits"]]
    if fitting:
        fastest = min(fitting, key=lambda p: (p["time_to_train_s"], p["hardware"], p["gpus"]))
        lines.append(("fastest", f"{fastest['gpus']:,} GPUs of {fastest['hardware']}: "
                                 f"{fmt_days(fastest['time_to_train_days'])} days ({fastest['label']})"))
        meeting = [p for p in fitting if p.get("meets_deadline")]
        if meeting:
            cheapest = min(meeting, key=lambda p: (p["gpu_hours"], p["hardware"], p["gpus"]))
            lines.append(("fewest GPU-hours meeting the deadline",
                          f"{cheapest['gpus']:,} GPUs of {cheapest['hardware']}: "
                          f"{fmt_count(cheapest['gpu_hours'])} GPU-hours, "
                          f"{fmt_days(cheapest['time_to_train_days'])} days"))
    else:
        lines.append(("fastest", "no point fits in memory"))
    return lines


# --------------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------------

def import_matplotlib():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib import ticker
    except ImportError as e:
        print(f"{PROG}: matplotlib is not available to {sys.executable} ({e}); "
              "install it with: apt-get install python3-matplotlib", file=sys.stderr)
        sys.exit(3)
    matplotlib.rcParams.update({
        "font.family": "DejaVu Sans",
        "font.size": 10,
        "axes.titlesize": 11,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "svg.hashsalt": "ptsim",
        "figure.dpi": 100,
    })
    return plt, ticker


def replace_atomically(path, write):
    """Writes through `write(file)` into a temporary file beside `path`, then renames it over
    `path`: an interrupted run leaves the old file or none, never half of one."""
    directory, name = os.path.split(path)
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_text(path, text):
    replace_atomically(path, lambda f: f.write(text.encode("utf-8")))


def save(plt, fig, path):
    # No Software/date entries: the same input gives the same bytes.
    replace_atomically(path, lambda f: fig.savefig(f, dpi=100, format="png", metadata={"Software": None}))
    plt.close(fig)


def empty_figure(plt, title, message):
    fig, ax = plt.subplots(figsize=(10, 2.5))
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, fontsize=12)
    ax.set_axis_off()
    return fig


def by_hardware(points):
    groups = {}
    for p in sorted(points, key=lambda p: (p["hardware"], p["gpus"])):
        groups.setdefault(p["hardware"], []).append(p)
    return groups


def plot_scaling(plt, ticker, report, path):
    points = report["points"]
    names = hardware_names(points)
    groups = by_hardware(points)
    fig, (ax_days, ax_mfu) = plt.subplots(1, 2, figsize=(13, 4.8))
    all_gpus = sorted({p["gpus"] for p in points})
    markers = ["o", "s", "^", "D", "v", "P", "X", "*"]
    lines = []
    for k, (hw, pts) in enumerate(groups.items()):
        color = f"C{k % 10}"
        marker = markers[k % len(markers)]
        fit = [p for p in pts if p["fits"]]
        xs = [p["gpus"] for p in fit]
        (line,) = ax_days.plot(xs, [p["time_to_train_days"] for p in fit], marker=marker, color=color,
                               label=names[hw])
        lines.append(line)
        ax_mfu.plot(xs, [p["mfu"] * 100 for p in fit], marker=marker, color=color, label=names[hw])
        for p in fit:
            ax_days.annotate(fmt_days(p["time_to_train_days"]), (p["gpus"], p["time_to_train_days"]),
                             textcoords="offset points", xytext=(4, 5), fontsize=8, color=color)
        # Scales where nothing fits: a cross on the x axis of both plots.
        for ax in (ax_days, ax_mfu):
            for p in pts:
                if not p["fits"]:
                    ax.plot([p["gpus"]], [0], marker="x", color=color, markersize=9, mew=2, clip_on=False,
                            transform=ax.get_xaxis_transform(), zorder=5)
    if any(not p["fits"] for p in points):
        (cross,) = ax_days.plot([], [], marker="x", color="0.3", linestyle="none", markersize=9, mew=2,
                                label="does not fit")
        lines.append(cross)
    days = report.get("days")
    if days is not None:
        line = ax_days.axhline(days, color="0.35", linestyle="--", linewidth=1.2, label=f"deadline ({days:g} days)")
        lines.append(line)
    for ax in (ax_days, ax_mfu):
        ax.set_xscale("log")
        ax.set_xticks(all_gpus)
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        if len(all_gpus) == 1:
            ax.set_xlim(all_gpus[0] / 2, all_gpus[0] * 2)
        else:
            ax.set_xlim(all_gpus[0] / 1.4, all_gpus[-1] * 1.4)
        ax.set_xlabel("GPUs")
        ax.set_ylim(bottom=0)
    all_days = [p["time_to_train_days"] for p in points if p["fits"]]
    if all_days and min(all_days) > 0 and max(all_days) / min(all_days) >= 10:
        # Over a decade or more, log-log: ideal scaling is a straight line.
        ax_days.set_yscale("log")
        ax_days.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax_days.yaxis.set_minor_formatter(ticker.NullFormatter())
        lo = min(all_days + ([days] if days else []))
        hi = max(all_days + ([days] if days else []))
        ax_days.set_ylim(lo / 1.5, hi * 1.5)
    ax_days.set_ylabel("time to train (days)")
    ax_days.set_title(f"Time to train on {fmt_tokens(report['tokens'])} tokens")
    ax_mfu.set_ylabel("MFU (%)")
    ax_mfu.set_title("Model FLOPs utilization")
    top = max([p["mfu"] * 100 for p in points if p["fits"]] + [10])
    ax_mfu.set_ylim(0, min(100, top * 1.25))
    fig.legend(handles=lines, loc="lower center", ncol=min(len(lines), 4), frameon=False)
    fig.suptitle(f"{report['model']}: scaling", fontsize=13)
    fig.tight_layout(rect=(0, 0.08, 1, 0.96))
    save(plt, fig, path)


def breakdown_keys(points):
    keys = list(BREAKDOWN_ORDER)
    for p in points:
        for k in sorted(p["breakdown_s"]):
            if k not in keys:
                keys.append(k)
    return keys


def color_for(key, table, extra_keys):
    if key in table:
        return table[key]
    return EXTRA_COLORS[extra_keys.index(key) % len(EXTRA_COLORS)]


def plot_breakdown(plt, report, path):
    fitting = [p for p in report["points"] if p["fits"]]
    if not fitting:
        save(plt, empty_figure(plt, "Step time breakdown", "no point fits in memory"), path)
        return
    groups = by_hardware(fitting)
    keys = breakdown_keys(fitting)
    extra = [k for k in keys if k not in BREAKDOWN_COLORS]
    widths = [max(2, len(pts)) for pts in groups.values()]
    fig, axes = plt.subplots(1, len(groups), figsize=(max(8, 2.2 * sum(widths) + 2), 5.2), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    handles = {}
    for ax, (hw, pts) in zip(axes[0], groups.items()):
        xs = list(range(len(pts)))
        bottom = [0.0] * len(pts)
        for key in keys:
            vals = [p["breakdown_s"].get(key, 0.0) for p in pts]
            bars = ax.bar(xs, vals, bottom=bottom, width=0.6, color=color_for(key, BREAKDOWN_COLORS, extra),
                          label=key.replace("_", " "))
            handles.setdefault(key, bars)
            bottom = [b + v for b, v in zip(bottom, vals)]
        for x, p, total in zip(xs, pts, bottom):
            ax.annotate(fmt_step(p["step_time_s"]), (x, total), textcoords="offset points", xytext=(0, 3),
                        ha="center", fontsize=8)
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{p['gpus']:,} GPUs" for p in pts])
        ax.set_xlim(-0.6, len(pts) - 0.4)
        ax.set_title(hardware_names(fitting)[hw], fontsize=10)
        ax.set_ylabel("seconds per step")
        ax.set_ylim(0, max(bottom) * 1.15)
        ax.grid(axis="x", visible=False)
    fig.legend(handles=[handles[k] for k in keys], labels=[k.replace("_", " ") for k in keys],
               loc="lower center", ncol=len(keys), frameon=False)
    fig.suptitle("Step time of the best strategy at each scale", fontsize=13)
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    save(plt, fig, path)


def plot_memory(plt, report, path):
    fitting = sorted((p for p in report["points"] if p["fits"]), key=lambda p: (p["hardware"], p["gpus"]))
    if not fitting:
        save(plt, empty_figure(plt, "Memory per pipeline stage", "no point fits in memory"), path)
        return
    # One row per hardware (wrapped after four scales), one column per scale.
    groups = by_hardware(fitting)
    ncols = min(4, max(len(pts) for pts in groups.values()))
    cells = []  # (row, col, point)
    row = 0
    for pts in groups.values():
        for i, p in enumerate(pts):
            cells.append((row + i // ncols, i % ncols, p))
        row += (len(pts) + ncols - 1) // ncols
    nrows = row
    fig_h = 3.7 * nrows + 1.2
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols + 0.6, fig_h), squeeze=False)
    handles = {}
    used = set()
    for r, c, p in cells:
        ax = axes[r][c]
        used.add((r, c))
        stages = sorted(p["stages"], key=lambda s: s["stage"])
        xs = list(range(len(stages)))
        static = [s["static_bytes"] / GIB for s in stages]
        act = [s["activations_peak_bytes"] / GIB for s in stages]
        other = [max(0.0, s["peak_bytes"] / GIB - a - b) for s, a, b in zip(stages, static, act)]
        h1 = ax.bar(xs, static, width=0.7, color="#4C72B0", label="static (weights, gradients, optimizer)")
        h2 = ax.bar(xs, act, bottom=static, width=0.7, color="#DD8452", label="activations (peak)")
        handles.setdefault("static", h1)
        handles.setdefault("act", h2)
        if any(o > 1e-3 for o in other):
            h3 = ax.bar(xs, other, bottom=[a + b for a, b in zip(static, act)], width=0.7, color="#8C8C8C",
                        label="other (at peak)")
            handles.setdefault("other", h3)
        cap = p["capacity_bytes"] / GIB
        h4 = ax.axhline(cap, color="#C44E52", linestyle="--", linewidth=1.5, label="GPU memory capacity")
        handles.setdefault("cap", h4)
        peak = max(s["peak_bytes"] for s in stages) / GIB
        ax.set_ylim(0, max(cap, peak) * 1.12)
        ax.set_xticks(xs)
        if len(stages) > 16:
            step = math.ceil(len(stages) / 16)
            ax.set_xticklabels([str(s["stage"]) if i % step == 0 else "" for i, s in enumerate(stages)])
        else:
            ax.set_xticklabels([str(s["stage"]) for s in stages])
        ax.set_xlabel("pipeline stage")
        ax.set_ylabel("GiB per GPU")
        ax.grid(axis="x", visible=False)
        ax.set_title(f"{p['hardware']}, {p['gpus']:,} GPUs\n{p['label']}", fontsize=9)
        ax.text(0.99, 0.97, f"peak {peak:.1f} of {cap:.0f} GiB", transform=ax.transAxes, ha="right", va="top",
                fontsize=8, bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8})
    for r in range(nrows):
        for c in range(ncols):
            if (r, c) not in used:
                axes[r][c].set_axis_off()
    order = [k for k in ("static", "act", "other", "cap") if k in handles]
    fig.legend(handles=[handles[k] for k in order], labels=[handles[k].get_label() for k in order],
               loc="lower center", ncol=len(order), frameon=False)
    fig.suptitle("Memory per pipeline stage of the best strategy at each scale", fontsize=13)
    fig.tight_layout(rect=(0, 0.55 / fig_h, 1, 1 - 0.45 / fig_h))
    save(plt, fig, path)


def stream_key(stream):
    # A second pipeline direction's streams (DualPipe: pp1_send_forward, compute1, ...) sort with
    # their first direction's.
    base = re.sub(r"^(compute|tp|cp|ep|pp)\d+", r"\1", stream)
    if base in STREAM_ORDER:
        return (STREAM_ORDER.index(base), base != stream, stream)
    return (STREAM_ORDER.index("dp") - 0.5, False, stream)  # unknown streams before dp


def plot_timeline(plt, report, path):
    timeline = report.get("timeline")
    rows = []  # (label, events)
    shown = total = 0
    if timeline is not None:
        ranks = sorted(timeline["ranks"], key=lambda r: r["rank"])
        total = len(ranks)
        if total > MAX_TIMELINE_RANKS:
            # Evenly spread ranks, the first and the last among them, so that the rows stay readable.
            k = MAX_TIMELINE_RANKS
            ranks = [ranks[round(i * (total - 1) / (k - 1))] for i in range(k)]
        shown = len(ranks)
        for r in ranks:
            streams = {}
            for e in r["events"]:
                streams.setdefault(e["stream"], []).append(e)
            for stream in sorted(streams, key=stream_key):
                rows.append((f"rank {r['rank']} (stage {r['stage']}) {stream}", streams[stream]))
    if not rows:
        msg = "no timeline in this report" if timeline is None else "no events in the timeline window"
        save(plt, empty_figure(plt, "Timeline excerpt", msg), path)
        return
    t0, t1 = timeline["window_s"]
    span = t1 - t0
    scale, unit = (1000.0, "ms") if span < 2 else (1.0, "s")
    categories = sorted({e["category"] for _, evs in rows for e in evs},
                        key=lambda c: (CATEGORY_ORDER.index(c) if c in CATEGORY_ORDER else len(CATEGORY_ORDER), c))
    extra = [c for c in categories if c not in CATEGORY_COLORS]
    # Rows 0.32 in high, down to 0.16 in when there are many (the figure stays under ~30 in).
    row_h = max(0.16, min(0.32, 28.0 / len(rows)))
    height = max(3.0, row_h * len(rows) + 1.8)
    fig, ax = plt.subplots(figsize=(14, height))
    handles = {}
    # Thin white edges separate back-to-back events, unless there are so many that they would
    # wash the bars out.
    edge = "white" if sum(len(evs) for _, evs in rows) <= 100 * len(rows) else "none"
    for y, (_, events) in enumerate(rows):
        per_cat = {}
        for e in events:
            start = max(e["start_s"], t0)
            end = min(e["end_s"], t1)
            if end < start:
                continue
            # A bar at least a hair wide, so that very short events stay visible.
            per_cat.setdefault(e["category"], []).append(((start - t0) * scale,
                                                          max((end - start) * scale, span * scale * 1e-4)))
        for cat in categories:
            if cat in per_cat:
                bars = per_cat[cat]
                # No edge on narrow bars: it would cover them.
                widths = [0.5 if w > span * scale * 0.004 else 0.0 for _, w in bars]
                coll = ax.broken_barh(bars, (y - 0.38, 0.76), facecolors=color_for(cat, CATEGORY_COLORS, extra),
                                      edgecolors=edge, linewidths=widths, label=cat)
                handles.setdefault(cat, coll)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label for label, _ in rows], fontsize=8 if row_h >= 0.24 else 6)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, span * scale)
    ax.set_xlabel(f"time since {t0:.3g} s ({unit})")
    ax.grid(axis="y", visible=False)
    # Lines between ranks.
    prev = None
    for y, (label, _) in enumerate(rows):
        rank = label.split(" (")[0]
        if prev is not None and rank != prev:
            ax.axhline(y - 0.5, color="0.6", linewidth=0.8)
        prev = rank
    ax.legend(handles=[handles[c] for c in categories if c in handles],
              labels=[c for c in categories if c in handles], loc="upper left", bbox_to_anchor=(1.005, 1.0),
              frameon=False, title="category")
    subset = f", {shown} of {total} ranks" if shown < total else ""
    ax.set_title(f"Timeline excerpt: {timeline['hardware']}, {timeline['gpus']:,} GPUs, {timeline['label']}\n"
                 f"{t0:.3g}\u2013{t1:.3g} s of one step{subset}", fontsize=10)
    fig.tight_layout()
    save(plt, fig, path)


# --------------------------------------------------------------------------------------------
# Markdown and HTML
# --------------------------------------------------------------------------------------------

def md_cell(text):
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def write_markdown(report, out_dir):
    lines = [f"# Capacity report: {md_cell(report['model'])}", ""]
    for key, value in summary_lines(report):
        lines.append(f"- **{key}**: {md_cell(value)}")
    lines += ["", "## Validated error", ""]
    for gpu, text in error_band_lines(report):
        lines.append(f"- **{md_cell(gpu)}**: {md_cell(text)}")
    source = (report.get("validated_error") or {}).get("source", "docs/accuracy.md")
    lines += ["", md_cell(ERROR_BAND_NOTE + source + "."), "", "## Points", ""]
    lines.append("| " + " | ".join(TABLE_HEADER) + " |")
    lines.append("|" + "|".join("---:" if i in NUMERIC_COLUMNS else "---" for i in range(len(TABLE_HEADER))) + "|")
    for row in table_rows(report):
        lines.append("| " + " | ".join(md_cell(c) for c in row) + " |")
    lines.append("")
    for _, filename, _, alt in PLOTS:
        lines += [f"## {alt}", "", f"![{alt}]({filename})", ""]
    write_text(os.path.join(out_dir, "report.md"), "\n".join(lines))


CSS = """
body { font-family: "DejaVu Sans", Arial, Helvetica, sans-serif; margin: 24px auto; max-width: 1360px;
       color: #222; padding: 0 16px; }
h1 { font-size: 1.6em; margin-bottom: 0.4em; }
h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
dl.summary { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; }
dl.summary dt { font-weight: bold; }
dl.summary dd { margin: 0; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.nofit td { color: #888; font-style: italic; }
img { max-width: 100%; height: auto; display: block; }
figure { margin: 0; }
""".strip()


def write_html(report, out_dir, images):
    esc = html.escape
    title = f"Capacity report: {report['model']}"
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           # Nothing may load from outside the page.
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
           "style-src 'unsafe-inline'\">",
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{esc(title)}</title>", f"<style>\n{CSS}\n</style>", "</head>", "<body>",
           f"<h1>{esc(title)}</h1>", '<dl class="summary">']
    for key, value in summary_lines(report):
        out.append(f"<dt>{esc(key)}</dt><dd>{esc(value)}</dd>")
    out += ["</dl>", "<h2>Validated error</h2>", '<dl class="summary" id="validated-error">']
    for gpu, text in error_band_lines(report):
        out.append(f"<dt>{esc(gpu)}</dt><dd>{esc(text)}</dd>")
    source = (report.get("validated_error") or {}).get("source", "docs/accuracy.md")
    out += ["</dl>", f"<p>{esc(ERROR_BAND_NOTE + source)}.</p>",
            "<h2>Points</h2>", '<table id="points">', "<thead><tr>"]
    out.append("".join(f"<th>{esc(h)}</th>" for h in TABLE_HEADER))
    out += ["</tr></thead>", "<tbody>"]
    for p, row in zip(report["points"], table_rows(report)):
        cls = "" if p["fits"] else ' class="nofit"'
        cells = []
        for i, c in enumerate(row):
            cells.append(f'<td class="num">{esc(c)}</td>' if i in NUMERIC_COLUMNS else f"<td>{esc(c)}</td>")
        out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    out += ["</tbody>", "</table>"]
    for key, _, img_id, alt in PLOTS:
        data = base64.b64encode(images[key]).decode("ascii")
        out += [f"<h2>{esc(alt)}</h2>", "<figure>",
                f'<img id="{img_id}" alt="{esc(alt)}" src="data:image/png;base64,{data}">', "</figure>"]
    out += ["</body>", "</html>", ""]
    write_text(os.path.join(out_dir, "report.html"), "\n".join(out))


# --------------------------------------------------------------------------------------------

def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        print(f"usage: {PROG} REPORT_JSON OUT_DIR", file=sys.stderr)
        return 0 if len(argv) == 2 and argv[1] in ("-h", "--help") else 2
    report_path, out_dir = argv[1], argv[2]
    try:
        report = load_report(report_path)
    except ReportError as e:
        print(f"{PROG}: {report_path}: {e}", file=sys.stderr)
        return 2
    plt, ticker = import_matplotlib()
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        print(f"{PROG}: cannot create {out_dir}: {e.strerror}", file=sys.stderr)
        return 1
    paths = {key: os.path.join(out_dir, filename) for key, filename, _, _ in PLOTS}
    plot_scaling(plt, ticker, report, paths["scaling"])
    plot_breakdown(plt, report, paths["breakdown"])
    plot_memory(plt, report, paths["memory"])
    plot_timeline(plt, report, paths["timeline"])
    images = {}
    for key, path in paths.items():
        with open(path, "rb") as f:
            images[key] = f.read()
    write_markdown(report, out_dir)
    write_html(report, out_dir, images)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

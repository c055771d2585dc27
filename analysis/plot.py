#!/usr/bin/python3
"""Plots dtsim traces: one panel per value of --panel, one colour per value of --colour,
the mean over runs (seeds) as a line and its 95% confidence interval as a band.

    /usr/bin/python3 analysis/plot.py runs/gsgm-study --panel nodes --colour algorithm.name \\
        --where data.partition.kind=shards --y test_accuracy -o docs/img/gsgm-shards
    /usr/bin/python3 analysis/plot.py runs/gossip --x bytes_sent --logx ...   # vs bytes sent

Inputs are traces (*.h5) or directories searched for them. Keys are dotted paths into each
trace's resolved scenario (attribute `scenario`), or the trace attributes `name` and `status`;
"a,b" labels by both. Keys are strict: a --panel, --colour or --where key that no trace has,
or an --x / --y that is no column of the table in any trace, is an error (exit status 2, one
line on stderr with a did-you-mean); a trace without a key some others have is labelled "-".
Curves whose x ranges differ are interpolated onto a common grid (up to the shortest run).
Writes OUT.png and OUT.svg (only OUT.png with --no-svg). Needs Debian's python3-h5py,
python3-matplotlib, python3-numpy, python3-scipy, python3-yaml.

Per-epoch curves (eval.per_epoch) come from the /epochs table:

    /usr/bin/python3 analysis/plot.py runs/ordering --table epochs --x epoch \\
        --y herding_bound --panel nodes --colour data.order.kind -o docs/img/ordering-herding

A measure per run against a numeric column of the CSV of `dtsim analyze --csv` or of
`dtsim report` (runs.csv: trace,status,<group keys>,<measures>), one panel per --measure:

    /usr/bin/python3 analysis/plot.py report-img/runs.csv --vs nodes --colour label \\
        --measure final_acc,acc_std_2nd_half --no-svg -o report-img/vs-nodes

There --vs, --colour, --where and --measure must be CSV columns and --vs values numbers.

Statistics (analysis/stats.py, the same as dtsim's C++ tables): over the k runs with a finite
value (NaN, e.g. diverged, left out), the mean and the half-width of its 95% confidence
interval, Student t with k - 1 degrees of freedom times the sample std (divisor k - 1) over
sqrt(k). One run draws no band or error bar.
"""
import argparse
import csv
import difflib
import math
import os
import sys

sys.dont_write_bytecode = True  # importing stats.py must not litter the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stats  # noqa: E402
from cli_input import UserError, natural_key  # noqa: E402

import h5py  # noqa: E402
import matplotlib  # noqa: E402
import matplotlib.ticker  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import yaml  # noqa: E402

BAND = "mean and 95% CI over runs (seeds)"
BARS = "mean, 95% CI"


def suggestion(name, choices, listing=None):
    """ (did you mean 'x'?), else the listing (if any) of what there is."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    if close:
        return f" (did you mean '{close[0]}'?)"
    return f" ({listing})" if listing else ""


def parse_where(items):
    pairs = []
    for w in items:
        key, sep, value = w.partition("=")
        if not sep or not key:
            raise UserError(f"--where: '{w}' is not KEY=VALUE")
        pairs.append((key, value))
    return pairs


def listed(values, most=12):
    values = sorted(values, key=natural_key)
    return ", ".join(values[:most]) + (", ..." if len(values) > most else "")


# ---------------------------------------------------------------------------------------------
# Curves from traces


class Trace:
    """What plotting needs of one trace: its keys, the table's column names, the x/y data."""

    def __init__(self, path, scenario, attrs, columns, x, y):
        self.path, self.scenario, self.attrs = path, scenario, attrs
        self.columns, self.x, self.y = columns, x, y

    def value(self, key):
        """The value of one (non-composite) key as text, None if this trace has no such key."""
        if key in ("name", "status"):
            return self.attrs.get(key)
        node = self.scenario
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        if isinstance(node, (dict, list)):
            return yaml.safe_dump(node, default_flow_style=True).strip().removesuffix("...").strip()
        return str(node)

    def label(self, key):
        """The value of a key, "a,b" joined by a space; "-" for what this trace lacks."""
        values = (self.value(k) for k in key.split(","))
        return " ".join("-" if v is None else v for v in values)

    def keys(self):
        """Every key this trace has: name, status and the dotted paths of its scenario."""
        out = {k for k in ("name", "status") if k in self.attrs}

        def walk(node, prefix):
            for k, v in node.items():
                out.add(prefix + str(k))
                if isinstance(v, dict):
                    walk(v, prefix + str(k) + ".")
        walk(self.scenario, "")
        return out


def trace_files(paths):
    for p in paths:
        if os.path.isdir(p):
            found = [os.path.join(root, f) for root, _, files in sorted(os.walk(p))
                     for f in sorted(files) if f.endswith(".h5")]
            if not found:
                raise UserError(f"{p}: no traces (*.h5)")
            yield from found
        elif not os.path.exists(p):
            raise UserError(f"{p}: no such file or directory")
        else:
            yield p


def text(attr):
    return attr.decode() if isinstance(attr, bytes) else str(attr)


def read_trace(path, table, x_key, y_key):
    try:
        with h5py.File(path, "r") as f:
            attrs = {k: text(f.attrs[k]) for k in ("name", "status", "scenario") if k in f.attrs}
            group = f[table] if isinstance(f.get(table), h5py.Group) else None
            columns = set(group.keys()) if group is not None else set()
            has_xy = x_key in columns and y_key in columns and len(group[x_key]) > 0
            x = np.asarray(group[x_key][:], dtype=float) if has_xy else None
            y = np.asarray(group[y_key][:], dtype=float) if has_xy else None
    except OSError as e:  # not HDF5, truncated, unreadable
        raise UserError(f"{path}: cannot read as an HDF5 trace ({e})") from None
    try:
        scenario = yaml.safe_load(attrs.get("scenario", "{}"))
    except yaml.YAMLError:
        raise UserError(f"{path}: its attribute 'scenario' is not YAML") from None
    return Trace(path, scenario if isinstance(scenario, dict) else {}, attrs, columns, x, y)


def check_key(traces, option, key):
    """Each part of `key` must be a key of at least one trace (else: a typo, not a group)."""
    for part in key.split(","):
        if not any(t.value(part) is not None for t in traces):
            known = set().union(*(t.keys() for t in traces))
            top = listed({k for k in known if "." not in k}, most=20)
            raise UserError(f"{option}: no trace has key '{part}'"
                            + suggestion(part, known, f"top-level keys: {top}"))


def check_where(traces, where):
    for key, value in where:
        check_key(traces, "--where", key)
        values = {t.label(key) for t in traces}
        if value not in values:
            raise UserError(f"--where: no trace has {key}={value}"
                            + suggestion(value, values, f"values: {listed(values)}"))


def check_column(traces, option, column, table):
    """`column` must be in the table of at least one trace; name those there are otherwise."""
    columns = set().union(*(t.columns for t in traces))
    if not columns:
        raise UserError(f"--table: no trace has a /{table} table")
    if column not in columns:
        close = difflib.get_close_matches(column, list(columns), n=1)
        raise UserError(f"{option}: no trace has column '{column}' in /{table} ("
                        + (f"did you mean '{close[0]}'? " if close else "")
                        + f"columns: {listed(columns, most=40)})")


def common_grid(runs, table, logx):
    """The x points every run reaches: up to the shortest run's end."""
    end = min(rx[-1] for rx, _ in runs)
    if table == "epochs":
        start = max(rx[0] for rx, _ in runs)
        return np.linspace(start, end, max(int(end - start) + 1, 1))
    if logx:  # from the latest first positive x of the runs (log(0) is -inf)
        start = max(rx[rx > 0][0] if (rx > 0).any() else end for rx, _ in runs)
        return np.geomspace(start, end, 200) if 0 < start < end else np.array([end])
    return np.linspace(0, end, 200)


def draw_curves(ax, runs, colour, label, args):
    grid = common_grid(runs, args.table, args.logx)
    ys = np.array([np.interp(grid, rx, ry) for rx, ry in runs])
    _, mean, _, ci95 = stats.summary_columns(ys)
    ax.plot(grid, mean, color=colour, label=f"{label} ({len(runs)})", lw=1.4,
            marker="o" if args.table == "epochs" else None, ms=3)
    if len(runs) > 1:  # one run has no interval
        ax.fill_between(grid, mean - ci95, mean + ci95, color=colour, alpha=0.2, lw=0)


def colour_map(n):
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return lambda i: cmap(i % cmap.N)


def place_legend(fig, axes, handles, title, below, inside_loc, fontsize=8):
    """One legend for all panels: under them (for many entries) or inside the first."""
    if below:
        legend = fig.legend(handles.values(), handles.keys(), fontsize=fontsize,
                            loc="lower center", ncol=min(4, len(handles)), title=title,
                            title_fontsize=7)
        # Grow the figure by the legend's drawn height (in inches) and keep the panels above.
        height = legend.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi + 0.1
        fig.set_figheight(fig.get_figheight() + height)
        fig.tight_layout(rect=(0, height / fig.get_figheight(), 1, 1))
    else:
        axes[0].legend(handles.values(), handles.keys(), fontsize=fontsize, loc=inside_loc,
                       title=title, title_fontsize=7)
        fig.tight_layout()


def save(fig, output, svg, what):
    exts = ("png", "svg") if svg else ("png",)
    try:
        os.makedirs(os.path.dirname(output) or ".", exist_ok=True)
        for ext in exts:
            fig.savefig(f"{output}.{ext}", dpi=120)
    except OSError as e:
        raise UserError(f"-o: cannot write {output}.png ({e.strerror or e})") from None
    print("wrote " + " and ".join(f"{output}.{ext}" for ext in exts) + f" ({what})")


def plot_curves(args, where):
    traces = [read_trace(p, args.table, args.x, args.y) for p in trace_files(args.inputs)]
    # Checked over all traces before grouping: a typo must not become one pooled group "-".
    check_key(traces, "--panel", args.panel)
    check_key(traces, "--colour", args.colour)
    check_where(traces, where)
    check_column(traces, "--x", args.x, args.table)
    check_column(traces, "--y", args.y, args.table)

    groups = {}  # (panel, colour) -> list of (x, y)
    for t in traces:
        if t.x is None or any(t.label(k) != v for k, v in where):
            continue
        groups.setdefault((t.label(args.panel), t.label(args.colour)), []).append((t.x, t.y))
    if not groups:
        raise UserError(f"no trace has both {args.x} and {args.y} in /{args.table}"
                        + (" and matches --where" if where else ""))

    panels = sorted({p for p, _ in groups}, key=natural_key)
    colours = sorted({c for _, c in groups}, key=natural_key)
    colour_of = colour_map(len(colours))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False,
                             sharey=True)
    for ax, panel in zip(axes[0], panels):
        for ci, colour in enumerate(colours):
            if (panel, colour) in groups:
                draw_curves(ax, groups[(panel, colour)], colour_of(ci), colour, args)
        ax.set_title(f"{args.panel} = {panel}")
        ax.set_xlabel(args.x)
        if args.logx:
            ax.set_xscale("log")
        ax.grid(alpha=0.3)
        if args.ylim:
            ax.set_ylim(*args.ylim)
        if args.logy:
            ax.set_yscale("log")
    axes[0][0].set_ylabel(args.y)
    handles = {}  # one entry per colour, without the per-panel run count
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab.rsplit(" (", 1)[0], h)
    if args.title:
        fig.suptitle(args.title)
    place_legend(fig, axes[0], handles, f"{args.colour}: {BAND}", args.legend_below,
                 "lower right" if args.table == "metrics" else "best")
    save(fig, args.output, not args.no_svg, f"{sum(len(v) for v in groups.values())} runs")


# ---------------------------------------------------------------------------------------------
# A measure per run against a column, from CSV


def read_csv_tables(paths):
    """All rows of the CSV files and the union of their columns."""
    rows, columns = [], []
    for path in paths:
        if os.path.isdir(path):
            raise UserError(f"--vs: {path} is a directory, not the CSV of `dtsim analyze --csv`")
        try:
            with open(path, newline="") as f:
                reader = csv.DictReader(f)
                rows += list(reader)
                columns += [c for c in reader.fieldnames or [] if c not in columns]
        except OSError as e:
            raise UserError(f"{path}: {e.strerror}") from None
        except (csv.Error, UnicodeDecodeError) as e:
            raise UserError(f"{path}: not a CSV file ({e})") from None
    return rows, columns


def check_csv_column(paths, columns, option, column):
    if column not in columns:
        raise UserError(f"{option}: {', '.join(paths)} has no column '{column}'"
                        + suggestion(column, columns, f"columns: {', '.join(columns)}"))


def number(row, column, option):
    text = row.get(column)
    if text in (None, ""):  # a short line or an empty field: no value
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise UserError(f"{option}: '{text}' in column '{column}' (run {row.get('trace', '?')})"
                        " is not a number") from None


def vs_groups(rows, args, measures):
    """colour label -> x -> measure -> the runs' values (NaN included)."""
    groups = {}
    for r in rows:
        x = number(r, args.vs, "--vs")
        if not math.isfinite(x):
            raise UserError(f"--vs: run {r.get('trace', '?')} has no value in column '{args.vs}'")
        label = " ".join(r.get(k) or "-" for k in args.colour.split(","))
        by_measure = groups.setdefault(label, {}).setdefault(x, {})
        for m in measures:
            by_measure.setdefault(m, []).append(number(r, m, "--measure"))
    return groups


def draw_measure(ax, groups, labels, measure, colour_of):
    for i, label in enumerate(labels):
        xs = sorted(groups[label])
        summaries = [stats.summary(groups[label][x][measure]) for x in xs]
        mean = np.array([s[1] for s in summaries])
        ci95 = np.nan_to_num(np.array([s[3] for s in summaries]))  # one run: no error bar
        # A point whose runs all lack the measure (e.g. too few evaluations) is left out:
        # matplotlib would warn about it on stderr, and there is nothing to draw.
        known = np.isfinite(mean)
        if known.any():
            ax.errorbar(np.array(xs)[known], mean[known], yerr=ci95[known], marker="o",
                        capsize=3, color=colour_of(i), label=label)


def plot_vs(args, where):
    """A measure computed by `dtsim analyze` (per run, CSV) against a numeric column."""
    rows, columns = read_csv_tables(args.inputs)
    measures = args.measure.split(",")
    check_csv_column(args.inputs, columns, "--vs", args.vs)
    for k in args.colour.split(","):
        check_csv_column(args.inputs, columns, "--colour", k)
    for k, v in where:
        check_csv_column(args.inputs, columns, "--where", k)
        values = {r.get(k) or "-" for r in rows}
        if v not in values:
            raise UserError(f"--where: no run has {k}={v}"
                            + suggestion(v, values, f"values: {listed(values)}"))
    for m in measures:
        check_csv_column(args.inputs, columns, "--measure", m)
    rows = [r for r in rows if all(r.get(k) == v for k, v in where)]
    if not rows:
        raise UserError("no run matches all of --where" if where else "the CSV has no runs")

    groups = vs_groups(rows, args, measures)
    labels = sorted(groups, key=natural_key)
    colour_of = colour_map(len(labels))
    xs = sorted({x for g in groups.values() for x in g})
    single = len(measures) == 1
    fig, axes = plt.subplots(1, len(measures), squeeze=False, sharex=True,
                             figsize=(5.2, 3.6) if single else (3.6 * len(measures), 3.2))
    for ax, m in zip(axes[0], measures):
        draw_measure(ax, groups, labels, m, colour_of)
        ax.set_xlabel(args.vs)
        if single:
            ax.set_ylabel(m)
        else:
            ax.set_title(m, fontsize=9)
        if xs[0] > 0:  # node counts and the like: doublings
            ax.set_xscale("log", base=2)
        ax.set_xticks(xs)
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(alpha=0.3)
    if args.title:
        if single:
            axes[0][0].set_title(args.title, fontsize=9)
        else:
            fig.suptitle(args.title)
    handles = dict(zip(labels, axes[0][0].get_legend_handles_labels()[0]))
    below = args.legend_below or (not single and len(labels) > 6)
    place_legend(fig, axes[0], handles, f"{args.colour} ({BARS})", below, "best", fontsize=7)
    save(fig, args.output, not args.no_svg, f"{len(rows)} runs")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", help="traces (*.h5) or directories; with --vs: CSVs")
    ap.add_argument("--panel", default="nodes", help="key: one panel per value")
    ap.add_argument("--colour", default="algorithm.name",
                    help="key (\"a,b\": both): one colour per value")
    ap.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                    help="only runs with this value (repeatable)")
    ap.add_argument("--x", default="sim_time_s",
                    help="a /metrics column: sim_time_s, bytes_sent, epoch, updates, ...")
    ap.add_argument("--logx", action="store_true",
                    help="logarithmic x axis (e.g. bytes sent, which differ by orders of "
                         "magnitude between compressors)")
    ap.add_argument("--legend-below", action="store_true",
                    help="legend under the panels (for many colours)")
    ap.add_argument("--y", default="test_accuracy")
    ap.add_argument("--table", default="metrics", choices=["metrics", "epochs"],
                    help="metrics: one row per evaluation; epochs: one row per epoch")
    ap.add_argument("--ylim", type=float, nargs=2)
    ap.add_argument("--logy", action="store_true")
    ap.add_argument("--title", default="")
    ap.add_argument("--vs", metavar="COLUMN",
                    help="instead of curves: plot --measure against this column of the "
                         "`dtsim analyze --csv` table given as input (e.g. nodes)")
    ap.add_argument("--measure", default="acc_std_2nd_half",
                    help="with --vs: a CSV column, or a comma list of them (one panel each)")
    ap.add_argument("--no-svg", action="store_true", help="write only OUT.png")
    ap.add_argument("-o", "--output", required=True, help="output path without extension")
    args = ap.parse_args(argv)
    try:
        where = parse_where(args.where)
        (plot_vs if args.vs else plot_curves)(args, where)
    except UserError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

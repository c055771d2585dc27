#!/usr/bin/python3
"""Plots dtsim traces: one panel per value of --panel, one colour per value of --colour,
the mean over runs (seeds) as a line and mean ± std as a band. Reads traces only.

    /usr/bin/python3 analysis/plot.py runs/gsgm-study --panel nodes --colour algorithm.name \
        --where data.partition.kind=shards --y test_accuracy -o docs/img/gsgm-shards
    /usr/bin/python3 analysis/plot.py runs/gossip --x bytes_sent --logx ...   # vs bytes sent

Keys are dotted paths into each trace's resolved scenario (attribute `scenario`), or the
trace attributes `name` and `status`; "a,b" labels by both. Writes OUT.png and OUT.svg. Needs Debian's
python3-h5py, python3-matplotlib, python3-numpy, python3-yaml.

Per-epoch curves (eval.per_epoch) come from the /epochs table:

    /usr/bin/python3 analysis/plot.py runs/ordering --table epochs --x epoch \
        --y herding_bound --panel nodes --colour data.order.kind -o docs/img/ordering-herding
"""
import argparse
import os
import sys

import h5py
import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import yaml  # noqa: E402


def trace_files(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in sorted(os.walk(p)):
                for f in sorted(files):
                    if f.endswith(".h5"):
                        yield os.path.join(root, f)
        else:
            yield p


def lookup(scenario, attrs, key):
    if "," in key:  # a composite label, e.g. algorithm.name,algorithm.lr
        return " ".join(lookup(scenario, attrs, k) for k in key.split(","))
    if key in ("name", "status"):
        return str(attrs.get(key, "?"))
    node = scenario
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return "-"
        node = node[part]
    return yaml.safe_dump(node, default_flow_style=True).strip().removesuffix("...").strip() \
        if isinstance(node, (dict, list)) else str(node)


def load(path, x_key, y_key, table="metrics"):
    with h5py.File(path, "r") as f:
        attrs = dict(f.attrs)
        scenario = yaml.safe_load(attrs.get("scenario", "{}")) or {}
        group = f[table] if table in f else {}
        x = group[x_key][:] if x_key in group else None
        y = group[y_key][:] if y_key in group else None
    return scenario, attrs, x, y


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--panel", default="nodes")
    ap.add_argument("--colour", default="algorithm.name")
    ap.add_argument("--where", action="append", default=[], metavar="KEY=VALUE")
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
    ap.add_argument("--measure", default="acc_std_2nd_half")
    ap.add_argument("-o", "--output", required=True, help="output path without extension")
    args = ap.parse_args(argv)
    filters = [w.split("=", 1) for w in args.where]
    if args.vs:
        return plot_vs(args, filters)

    groups = {}  # (panel, colour) -> list of (x, y)
    for path in trace_files(args.inputs):
        scenario, attrs, x, y = load(path, args.x, args.y, args.table)
        if x is None or y is None or any(lookup(scenario, attrs, k) != v for k, v in filters):
            continue
        key = (lookup(scenario, attrs, args.panel), lookup(scenario, attrs, args.colour))
        groups.setdefault(key, []).append((x, y))
    if not groups:
        sys.exit("plot.py: no trace matched")

    def sort_key(v):
        try:
            return (0, float(v))
        except ValueError:
            return (1, v)

    panels = sorted({p for p, _ in groups}, key=sort_key)
    colours = sorted({c for _, c in groups}, key=sort_key)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False,
                             sharey=True)
    cmap = plt.get_cmap("tab10")
    for ax, panel in zip(axes[0], panels):
        for ci, colour in enumerate(colours):
            runs = groups.get((panel, colour))
            if not runs:
                continue
            end = min(r[0][-1] for r in runs)
            if args.table == "epochs":
                start = max(r[0][0] for r in runs)
                grid = np.linspace(start, end, int(end - start) + 1)
            elif args.logx:  # from the latest first positive x of the runs (log(0) is -inf)
                start = max(rx[rx > 0][0] if (rx > 0).any() else end for rx, _ in runs)
                grid = np.geomspace(start, end, 200) if 0 < start < end else np.array([end])
            else:
                grid = np.linspace(0, end, 200)
            ys = np.array([np.interp(grid, rx, ry) for rx, ry in runs])
            mean, std = ys.mean(axis=0), ys.std(axis=0)
            ax.plot(grid, mean, color=cmap(ci % 10), label=f"{colour} ({len(runs)})", lw=1.4,
                    marker="o" if args.table == "epochs" else None, ms=3)
            ax.fill_between(grid, mean - std, mean + std, color=cmap(ci % 10), alpha=0.2, lw=0)
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
    labels = {}
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            labels.setdefault(lab.rsplit(" (", 1)[0], h)
    title = f"{args.colour} (mean ± std over runs)"
    if args.legend_below:
        rows = (len(labels) + 3) // 4
        fig.set_figheight(3.4 + 0.25 * rows + 0.3)
        fig.legend(labels.values(), labels.keys(), fontsize=8, loc="lower center",
                   ncol=min(4, len(labels)), title=title, title_fontsize=7)
    else:
        axes[0][0].legend(labels.values(), labels.keys(), fontsize=8,
                          loc="lower right" if args.table == "metrics" else "best",
                          title=title, title_fontsize=7)
    if args.title:
        fig.suptitle(args.title)
    if args.legend_below:
        fig.tight_layout(rect=(0, (0.25 * rows + 0.45) / fig.get_figheight(), 1, 1))
    else:
        fig.tight_layout()
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    for ext in ("png", "svg"):
        fig.savefig(f"{args.output}.{ext}", dpi=120)
    print(f"wrote {args.output}.png and {args.output}.svg ({sum(len(v) for v in groups.values())} runs)")


def plot_vs(args, filters):
    """A measure computed by `dtsim analyze` (per run, CSV) against a numeric column."""
    import csv
    rows = []
    for path in args.inputs:
        with open(path, newline="") as f:
            rows += list(csv.DictReader(f))
    rows = [r for r in rows if all(r.get(k) == v for k, v in filters)]
    if not rows:
        sys.exit("plot.py: no row matched")
    groups = {}
    for r in rows:
        label = " ".join(r.get(k, "?") for k in args.colour.split(","))
        groups.setdefault(label, {}).setdefault(float(r[args.vs]), []).append(float(r[args.measure]))
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for label, by_x in sorted(groups.items()):
        xs = sorted(by_x)
        mean = np.array([np.nanmean(by_x[x]) for x in xs])
        std = np.array([np.nanstd(by_x[x]) for x in xs])
        ax.errorbar(xs, mean, yerr=std, marker="o", capsize=3, label=label)
    ax.set_xlabel(args.vs)
    ax.set_ylabel(args.measure)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted({x for g in groups.values() for x in g}))
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    if args.title:
        ax.set_title(args.title, fontsize=9)
    fig.tight_layout()
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    for ext in ("png", "svg"):
        fig.savefig(f"{args.output}.{ext}", dpi=120)
    print(f"wrote {args.output}.png and {args.output}.svg ({len(rows)} runs)")


if __name__ == "__main__":
    main()

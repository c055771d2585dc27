#!/usr/bin/python3
"""Pivot a `dtsim analyze --csv` file into a paper-style Markdown table: one row per value of
the --rows keys, one column per value of the --cols keys, each cell the mean ± std over the
runs that share them (e.g. seeds) of one measure.

    /usr/bin/python3 analysis/pivot.py docs/qg-study.csv --rows algorithm.name \\
        --cols topology.kind,data.partition.alpha --value node_acc_mean --scale 100

Rows and columns keep the order in which their values first appear in the CSV unless
--order-rows / --order-cols list them. Diverged runs count with their value (NaN cells show
how many runs had no value)."""
import argparse
import csv
import math
import sys


def key_of(row, keys):
    return tuple(row[k] for k in keys)


def mean_std(xs):
    m = sum(xs) / len(xs)
    s = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
    return m, s


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--rows", required=True, help="comma-separated keys of a row")
    ap.add_argument("--cols", required=True, help="comma-separated keys of a column")
    ap.add_argument("--value", required=True, help="the measure in each cell")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply values (100: percent)")
    ap.add_argument("--digits", type=int, default=2)
    ap.add_argument("--order-rows", help="comma-separated row labels, in order")
    ap.add_argument("--order-cols", help="comma-separated column labels, in order")
    args = ap.parse_args()

    with open(args.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"pivot.py: {args.csv} has no runs")
    row_keys, col_keys = args.rows.split(","), args.cols.split(",")
    for k in row_keys + col_keys + [args.value]:
        if k not in rows[0]:
            sys.exit(f"pivot.py: {args.csv} has no column '{k}' (has: {', '.join(rows[0])})")

    cells, row_labels, col_labels = {}, [], []
    for r in rows:
        rl, cl = " / ".join(key_of(r, row_keys)), " / ".join(key_of(r, col_keys))
        if rl not in row_labels:
            row_labels.append(rl)
        if cl not in col_labels:
            col_labels.append(cl)
        cells.setdefault((rl, cl), []).append(float(r[args.value]) * args.scale)
    if args.order_rows:
        row_labels = [x for x in args.order_rows.split(",") if x in row_labels]
    if args.order_cols:
        col_labels = [x for x in args.order_cols.split(",") if x in col_labels]

    def cell(rl, cl):
        xs = cells.get((rl, cl), [])
        finite = [x for x in xs if math.isfinite(x)]
        if not finite:
            return "–" if not xs else f"n/a ({len(xs)} runs)"
        m, s = mean_std(finite)
        text = f"{m:.{args.digits}f} ± {s:.{args.digits}f}"
        return text + (f" ({len(xs) - len(finite)} n/a)" if len(finite) < len(xs) else "")

    print(f"| {' / '.join(row_keys)} \\ {' / '.join(col_keys)} | " + " | ".join(col_labels) + " |")
    print("|---" * (len(col_labels) + 1) + "|")
    for rl in row_labels:
        print(f"| {rl} | " + " | ".join(cell(rl, cl) for cl in col_labels) + " |")


if __name__ == "__main__":
    main()

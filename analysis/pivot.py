#!/usr/bin/python3
"""Pivot a `dtsim analyze --csv` file into a paper-style Markdown table: one row per value of
the --rows keys, one column per value of the --cols keys, each cell `mean ± interval` of one
measure over the runs that share them (e.g. seeds).

    /usr/bin/python3 analysis/pivot.py docs/qg-study.csv --rows algorithm.name \\
        --cols topology.kind,data.partition.alpha --value node_acc_mean --scale 100

Statistics (analysis/stats.py, the same as dtsim's C++ tables): NaN values (diverged runs) are
left out; --interval ci95 (default) is the half-width of the 95% confidence interval of the
mean, Student t with k - 1 degrees of freedom over the k runs with a value; --interval std is
the sample standard deviation (divisor k - 1). A cell with one value shows it alone under
ci95 (no interval) and `± 0` under std. A line under the table states the interval.

Rows and columns keep the order in which their values first appear in the CSV unless
--order-rows / --order-cols list them. Diverged runs are counted (NaN cells show how many runs
had no value). Unknown columns, a missing file or a non-numeric value exit with status 2 and
one line on stderr."""
import argparse
import math
import os
import sys

sys.dont_write_bytecode = True  # importing stats.py must not litter the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stats  # noqa: E402
from cli_input import UserError, check_columns, read_rows  # noqa: E402

CAPTIONS = {
    "ci95": "mean ± 95% CI (Student t, sample std n−1) over runs",
    "std": "mean ± sample std (n−1) over runs",
}


def number(text, row, column):
    try:
        return float(text)
    except (TypeError, ValueError):
        raise UserError(f"--value: '{text}' in column '{column}' of run {row.get('trace', '?')} "
                        "is not a number") from None


def cell_text(values, interval, digits):
    """`mean ± interval (n n/a)` of one cell's values, NaN left out and counted."""
    if not values:
        return "–"
    k, mean, std, ci95 = stats.summary(values)
    if k == 0:
        return f"n/a ({len(values)} runs)"
    spread = std if interval == "std" else ci95
    text = f"{mean:.{digits}f}" + ("" if math.isnan(spread) else f" ± {spread:.{digits}f}")
    return text + (f" ({len(values) - k} n/a)" if k < len(values) else "")


def pivot(args):
    rows, columns = read_rows(args.csv)
    if not rows:
        raise UserError(f"{args.csv} has no runs")
    row_keys, col_keys = args.rows.split(","), args.cols.split(",")
    check_columns(args.csv, columns, "--rows", row_keys)
    check_columns(args.csv, columns, "--cols", col_keys)
    check_columns(args.csv, columns, "--value", [args.value])

    cells, row_labels, col_labels = {}, [], []
    for r in rows:
        # A short line leaves its last fields None (DictReader's restval).
        rl = " / ".join(r[k] or "" for k in row_keys)
        cl = " / ".join(r[k] or "" for k in col_keys)
        if rl not in row_labels:
            row_labels.append(rl)
        if cl not in col_labels:
            col_labels.append(cl)
        cells.setdefault((rl, cl), []).append(number(r[args.value], r, args.value) * args.scale)
    if args.order_rows:
        row_labels = [x for x in args.order_rows.split(",") if x in row_labels]
    if args.order_cols:
        col_labels = [x for x in args.order_cols.split(",") if x in col_labels]

    lines = [f"| {' / '.join(row_keys)} \\ {' / '.join(col_keys)} | " + " | ".join(col_labels)
             + " |", "|---" * (len(col_labels) + 1) + "|"]
    for rl in row_labels:
        lines.append(f"| {rl} | " + " | ".join(
            cell_text(cells.get((rl, cl), []), args.interval, args.digits) for cl in col_labels)
            + " |")
    lines += ["", CAPTIONS[args.interval]]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--rows", required=True, help="comma-separated keys of a row")
    ap.add_argument("--cols", required=True, help="comma-separated keys of a column")
    ap.add_argument("--value", required=True, help="the measure in each cell")
    ap.add_argument("--interval", choices=sorted(CAPTIONS), default="ci95",
                    help="after ±: ci95, the 95%% CI half-width (Student t; default), or std, "
                         "the sample standard deviation")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply values (100: percent)")
    ap.add_argument("--digits", type=int, default=2)
    ap.add_argument("--order-rows", help="comma-separated row labels, in order")
    ap.add_argument("--order-cols", help="comma-separated column labels, in order")
    args = ap.parse_args(argv)
    try:
        print(pivot(args))
    except UserError as e:
        print(f"pivot.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

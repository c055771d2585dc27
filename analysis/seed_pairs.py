#!/usr/bin/python3
"""Per-seed paired gains from a `dtsim analyze --csv` file, as a Markdown table: one row per
value of the --rows keys, one column per pair A:B of values of --key, each cell the gain of
A over B in every seed the two share, in seed order ("+12.5 / +1.4 / +0.8%"). Where a mean
and its CI would hide whether one seed carries a difference, this shows each seed.

    /usr/bin/python3 analysis/seed_pairs.py docs/ordering-lenet.csv --rows nodes \\
        --key data.order.kind --pairs cd-grab:random,id-grab:random,cd-grab:id-grab \\
        --value epoch_train_loss_2nd_half --lower-is-better

Gain in %: (B - A) / B * 100 with --lower-is-better (a loss: positive = A lower), else
(A - B) / B * 100. A seed with a NaN on either side is shown as "nan". Unknown columns or
values, or a missing file, exit with status 2 and one line on stderr."""
import argparse
import math
import os
import sys

sys.dont_write_bytecode = True  # importing cli_input.py must not litter the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_input import UserError, check_columns, natural_key, read_rows  # noqa: E402


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--rows", required=True, help="comma-separated keys, one table row per value")
    ap.add_argument("--key", required=True, help="the key whose values are compared")
    ap.add_argument("--pairs", required=True, help="A:B,... values of --key")
    ap.add_argument("--value", required=True, help="the measure")
    ap.add_argument("--lower-is-better", action="store_true")
    ap.add_argument("--seed-key", default="seed")
    args = ap.parse_args(argv)
    rows, columns = read_rows(args.csv)
    keys = args.rows.split(",")
    check_columns(args.csv, columns, "--rows", keys)
    check_columns(args.csv, columns, "--key", [args.key])
    check_columns(args.csv, columns, "--value", [args.value])
    check_columns(args.csv, columns, "--seed-key", [args.seed_key])
    pairs = [p.split(":") for p in args.pairs.split(",")]
    if any(len(p) != 2 for p in pairs):
        raise UserError(f"--pairs: expected A:B[,A:B...], got '{args.pairs}'")
    known = {r[args.key] for r in rows}
    for a, b in pairs:
        for v in (a, b):
            if v not in known:
                raise UserError(f"--pairs: no run has {args.key} = {v}")

    table = {}  # (row values) -> {key value -> {seed -> value}}
    for r in rows:
        group = tuple(r[k] for k in keys)
        table.setdefault(group, {}).setdefault(r[args.key], {})[r[args.seed_key]] = float(
            r[args.value])

    def gain(a, b):
        if math.isnan(a) or math.isnan(b) or b == 0:
            return "nan"
        g = (b - a) / b * 100 if args.lower_is_better else (a - b) / b * 100
        return f"{g:+.1f}"

    print("| " + " | ".join(keys + [f"{a} vs {b}" for a, b in pairs]) + " |")
    print("|" + "---|" * (len(keys) + len(pairs)))
    for group in sorted(table, key=lambda g: [natural_key(v) for v in g]):
        cells = []
        for a, b in pairs:
            va, vb = table[group].get(a, {}), table[group].get(b, {})
            seeds = sorted(set(va) & set(vb), key=natural_key)
            cells.append(" / ".join(gain(va[s], vb[s]) for s in seeds) + "%" if seeds else "–")
        print("| " + " | ".join(list(group) + cells) + " |")
    print()
    print(f"gain of A over B in {args.value}, per {args.seed_key} in order"
          + (" (lower is better)" if args.lower_is_better else ""))


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)

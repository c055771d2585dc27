#!/usr/bin/env python3
# The goal row's figures from a scripts/device_run.sh log (docs/cuda.md): the A/B runs of
# PARTS=ab (the baseline binary and this one in turn; each binary's rates as mean ± sample
# std, and the ratio of the pairs with a 95% t interval), the steady state from PARTS=goal's
# 1.6 M-step runs and the new binary's 400 k-step runs (extra node-steps over extra wall
# time: the 400 k runs' mean of steps / rate, the 1.6 M runs' steps over their mean rate,
# which is all the log gives), and, given the 2-core CPU's
# figures, the ratios at equal budgets and in steady state; with the rows' device phases
# (backend_bench.sh's last column), each binary's mean milliseconds per round mixing, in the
# pass, in the local steps and idle. Standard library only.
#
#   bench/goal_row.py LOG [--cpu SHORT_STEPS:RATE,LONG_STEPS:RATE]
#
# e.g. bench/goal_row.py docs/device-runs/2026-11-26-h100-run11-device_run.txt \
#        --cpu 409600:6091,1599488:6180
import argparse
import math
import re
import statistics
import sys

# 97.5% quantiles of Student's t for 1 to 10 degrees of freedom.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]


def interval(values):
    m = statistics.mean(values)
    if len(values) < 2:
        return m, float("nan"), float("nan")
    h = T975[min(len(values) - 1, len(T975)) - 1] * statistics.stdev(values) / math.sqrt(len(values))
    return m, m - h, m + h


def figure(values):
    if len(values) < 2:
        return f"{values[0]:,.0f}"
    return f"{statistics.mean(values):,.0f} ± {statistics.stdev(values):,.0f}"


PHASES = ("mixing", "pass", "local steps", "idle")


def phases(line):
    """The row's device phases, ms per batch (its last column), or None where it has none."""
    last = line.split()[-1]
    parts = last.split("/")
    if len(parts) != len(PHASES) or "." not in last:  # "-", or an older log's % of wall
        return None
    return [float(x) for x in parts]


def parse(path):
    """A/B runs: (commit, run, steps, rate, backend-only rate) in log order; goal rows:
    (steps, mean rate) of the 1.6 M-step step; each title's rows' device phases."""
    ab, goal, split = [], [], {}
    title = None
    for line in open(path, encoding="utf-8"):
        m = re.match(r"=== goal row, commit: ([\w-]+), run (\d+)$", line.strip())
        if m:
            title = (m.group(1), int(m.group(2)))
            continue
        if line.startswith("=== goal row, 1.6 M steps"):
            title = ("goal", 0)
            continue
        if line.startswith("==="):
            title = None
            continue
        row = re.match(r"cuda-resident\s+1024\s+(\d+)\s+([\d.]+)(?:±[\d.]+)?\s+([\d.]+)", line)
        if row and title:
            steps, rate, alone = int(row.group(1)), float(row.group(2)), float(row.group(3))
            if phases(line):
                split.setdefault(title[0], []).append(phases(line))
            if title[0] == "goal":
                goal.append((steps, rate))
            else:
                ab.append((title[0], title[1], steps, rate, alone))
    return ab, goal, split


def print_phases(label, rows):
    """Mean ± sample std of each phase over a binary's rows."""
    cells = [figure_ms([r[k] for r in rows]) for k in range(len(PHASES))]
    print(f"{label} device phases, ms per round ({len(rows)} rows): "
          + ", ".join(f"{name} {cell}" for name, cell in zip(PHASES, cells)))


def figure_ms(values):
    if len(values) < 2:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("log")
    p.add_argument("--cpu", help="SHORT_STEPS:RATE,LONG_STEPS:RATE of the 2-core CPU")
    p.add_argument("--pair", help="BASELINE,NEW: the two labels to compare (default: the first"
                   " two in the log; PARTS=mixed's are mixed0,mixed1)")
    a = p.parse_args()
    ab, goal, split = parse(a.log)
    if a.pair:
        wanted = a.pair.split(",")
        ab = [row for row in ab if row[0] in wanted]
    if not ab:
        sys.exit(f"error: {a.log}: no 'goal row, commit: ..., run N' steps (PARTS=ab or mixed)")
    baseline = a.pair.split(",")[0] if a.pair else ab[0][0]  # run 1 starts with the baseline
    new = next((c for c, *_ in ab if c != baseline), None)
    if new is None:
        sys.exit(f"error: {a.log}: only one binary in the A/B steps")
    by = {c: {r: (s, x, y) for cc, r, s, x, y in ab if cc == c} for c in (baseline, new)}
    for c in (baseline, new):
        rates = [x for _, x, _ in by[c].values()]
        alone = [y for _, _, y in by[c].values()]
        print(f"{c}: {' / '.join(f'{x:,.0f}' for x in rates)} node-steps/s = {figure(rates)};"
              f" backend alone {figure(alone)}")
    for c in (baseline, new):
        if c in split:
            print_phases(c, split[c])
    runs = sorted(set(by[baseline]) & set(by[new]))
    for i, label in ((1, "whole run"), (2, "backend alone")):
        ratios = [by[new][r][i] / by[baseline][r][i] for r in runs]
        m, lo, hi = interval(ratios)
        print(f"ratio {new}/{baseline}, {label}: {' '.join(f'{x:.3f}' for x in ratios)}"
              f" -> {m:.3f} [{lo:.3f}, {hi:.3f}] (95% t, {len(ratios)} pairs)")
    if not goal:
        return
    short_steps = by[new][runs[0]][0]
    short_wall = statistics.mean(s / x for s, x, _ in by[new].values())
    long_steps, long_rate = goal[0]
    long_wall = long_steps / long_rate
    steady = (long_steps - short_steps) / (long_wall - short_wall)
    if "goal" in split:
        print_phases(f"{new} at {long_steps:,} node-steps", split["goal"])
    print(f"{new} at {long_steps:,} node-steps: {long_rate:,.0f} node-steps/s; steady state"
          f" ({short_steps:,} -> {long_steps:,}: {short_wall:.3f} s -> {long_wall:.3f} s):"
          f" {steady:,.0f}")
    if a.cpu:
        (s1, r1), (s2, r2) = [(int(x), float(y)) for x, y in
                              (part.split(":") for part in a.cpu.split(","))]
        cpu_steady = (s2 - s1) / (s2 / r2 - s1 / r1)
        print(f"2-core CPU: {r2:,.0f} at {s2:,}, steady {cpu_steady:,.0f}; GPU/CPU"
              f" {long_rate / r2:.1f}x at equal budgets, {steady / cpu_steady:.1f}x steady")


if __name__ == "__main__":
    main()

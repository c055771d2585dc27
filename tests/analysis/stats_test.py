#!/usr/bin/python3
"""analysis/stats.py: sample std (ddof = 1), Student-t 95% CI of the mean, NaN skipped, no
interval below two values, paired per-seed differences; checked against hand-computed values
and numpy."""
import math
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../analysis"))
import stats  # noqa: E402

failures = []


def check(what, got, want, tol=1e-9):
    ok = (math.isnan(want) and math.isnan(got)) if isinstance(want, float) and math.isnan(want) \
        else abs(got - want) <= tol * max(1.0, abs(want))
    if not ok:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def main():
    # Student t quantiles from tables.
    check("t975(1)", stats.t975(1), 12.706204736, 1e-9)
    check("t975(3)", stats.t975(3), 3.182446305, 1e-9)
    check("t975(30)", stats.t975(30), 2.042272456, 1e-9)

    # 1, 2, 3, 4: mean 2.5, s = sqrt(5/3), ci95 = t(0.975, 3) * s / 2.
    k, mean, std, ci = stats.summary([1, 2, 3, 4])
    check("k", k, 4)
    check("mean", mean, 2.5)
    check("std", std, 1.2909944487, 1e-10)
    check("std vs numpy", std, float(np.std([1, 2, 3, 4], ddof=1)))
    check("ci95", ci, 3.182446305 * 1.2909944487 / 2, 1e-9)

    # NaN (a diverged run) is left out and not counted.
    k, mean, std, ci = stats.summary([0.8, math.nan, 0.9, 0.7])
    check("k without NaN", k, 3)
    check("mean without NaN", mean, 0.8)
    check("std without NaN", std, float(np.std([0.8, 0.9, 0.7], ddof=1)))
    check("ci95 without NaN", ci, stats.t975(2) * 0.1 / math.sqrt(3))

    # One value: no spread (std and ci95 NaN, as numpy ddof=1 and the C++ side); none: no mean.
    k, mean, std, ci = stats.summary([math.nan, 5.0])
    check("k of one", k, 1)
    check("mean of one", mean, 5.0)
    check("std of one", std, math.nan)
    check("ci95 of one", ci, math.nan)
    k, mean, std, ci = stats.summary([])
    check("k of none", k, 0)
    check("mean of none", mean, math.nan)
    check("ci95 of none", ci, math.nan)

    # Column-wise (curves): each column as summary() of its finite values.
    rows = np.array([[1, 5, math.nan], [2, math.nan, math.nan], [3, 7, 1], [4, 9, math.nan]])
    ks, means, stds, cis = stats.summary_columns(rows)
    for j in range(rows.shape[1]):
        want = stats.summary(rows[:, j])
        for name, got, w in zip(("k", "mean", "std", "ci95"),
                                (ks[j], means[j], stds[j], cis[j]), want):
            check(f"column {j} {name}", float(got), float(w))

    # Paired: seeds 1, 2 in both and finite (3 has NaN in a, 4 is missing in b).
    a = {1: 0.90, 2: 0.80, 3: math.nan, 4: 0.70}
    b = {1: 0.85, 2: 0.70, 3: 0.60, 5: 0.50}
    pairs, mean, std, ci = stats.paired_difference(a, b)
    check("pairs", pairs, 2)
    check("paired mean", mean, 0.075)
    check("paired std", std, float(np.std([0.05, 0.10], ddof=1)))
    check("paired ci95", ci, 12.706204736 * float(np.std([0.05, 0.10], ddof=1)) / math.sqrt(2),
          1e-9)

    if failures:
        sys.exit("stats.py:\n  " + "\n  ".join(failures))
    print("stats.py: ok")


if __name__ == "__main__":
    main()

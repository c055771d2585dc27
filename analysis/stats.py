"""Statistics over runs (seeds): the one convention of every dtsim table and plot, the Python
twin of analysis/statistics.hpp.

Of a set of per-run values, only the k finite ones count (a diverged run has no accuracy):
the mean, the sample standard deviation s (divisor k - 1, numpy's ddof=1) and the half-width
of the 95% confidence interval of the mean by Student's t with k - 1 degrees of freedom,
ci95 = t(0.975, k - 1) * s / sqrt(k). Fewer than two values have no spread: s and ci95 are
NaN (as numpy's std(ddof=1) and the C++ side), shown as the mean alone; no value at all also
gives mean = NaN. A method is compared with a baseline by
the paired per-seed differences method - baseline over the seeds both have a finite value for,
summarised the same way.
"""
import math

import numpy as np
import scipy.stats


def t975(df):
    """The 0.975 quantile of Student's t with df >= 1 degrees of freedom (12.706 for 1)."""
    return float(scipy.stats.t.ppf(0.975, df))


def summary(values):
    """(k, mean, std, ci95) of the finite values, by the convention above."""
    x = np.asarray(list(values), dtype=float)
    x = x[np.isfinite(x)]
    k = len(x)
    if k == 0:
        return 0, math.nan, math.nan, math.nan
    mean = float(x.mean())
    if k < 2:
        return 1, mean, math.nan, math.nan
    std = float(x.std(ddof=1))  # numpy's two-pass form keeps digits for small spreads
    return k, mean, std, t975(k - 1) * std / math.sqrt(k)


def summary_columns(rows):
    """summary() of each column of a 2-D array (rows: runs), as arrays k, mean, std, ci95.

    For curves: one column per point of the x grid, NaN where a run has no value."""
    y = np.asarray(rows, dtype=float)
    finite = np.isfinite(y)
    k = finite.sum(axis=0)
    y0 = np.where(finite, y, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(k > 0, y0.sum(axis=0) / k, np.nan)
        dev = np.where(finite, y0 - mean, 0.0)
        std = np.where(k > 1, np.sqrt((dev ** 2).sum(axis=0) / np.maximum(k - 1, 1)), np.nan)
        t = scipy.stats.t.ppf(0.975, np.maximum(k - 1, 1))
        ci95 = np.where(k > 1, t * std / np.sqrt(k), np.nan)
    return k, mean, std, ci95


def paired_difference(a_by_seed, b_by_seed):
    """(pairs, mean, std, ci95) of a - b over the seeds with a finite value in both dicts."""
    diffs = [a_by_seed[s] - b_by_seed[s] for s in a_by_seed
             if s in b_by_seed and math.isfinite(a_by_seed[s]) and math.isfinite(b_by_seed[s])]
    return summary(diffs)

// SPDX-License-Identifier: MIT
// Statistics over runs (seeds), one convention for every table and plot (analysis/stats.py is
// its Python twin): the sample standard deviation (divisor k - 1) and the 95% confidence
// interval of the mean from Student's t with k - 1 degrees of freedom. NaN values are skipped
// (a diverged run has no final accuracy); fewer than two values give NaN spread.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace dtsim::analysis {

struct Summary {
  std::size_t count = 0; // finite values
  double mean = 0;       // NaN when count = 0
  double std = 0;        // sample std (k - 1); NaN when count < 2
  double ci95 = 0;       // half-width: t(0.975, k - 1) * std / sqrt(k); NaN when count < 2
};

Summary summarize(std::span<const double> values);

// The 0.975 quantile of Student's t with `dof` >= 1 degrees of freedom (12.706 for 1).
double t975(std::size_t dof);

// Paired differences method - baseline over the seeds both have (values aligned by seed, NaN
// where a run is missing or has no value): their summary (mean difference, sample std, CI).
Summary paired_difference(std::span<const double> method, std::span<const double> baseline);

} // namespace dtsim::analysis

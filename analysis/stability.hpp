// SPDX-License-Identifier: MIT
// Stability measures of an accuracy (or loss) curve, docs/analysis.md.
#pragma once

#include <cstddef>
#include <span>

namespace dtsim::analysis {

// Measures of one curve a_1..a_K sampled at evaluation points (lower = steadier). The
// "second half" is k >= K/2 (integer division), GSGM's most likely reading of stability.
struct Stability {
  double final_value = 0;     // mean over the last 10% of points (at least one)
  double best_value = 0;      // maximum
  double std_second_half = 0; // S_std: population std over the second half
  double window_std = 0;      // S_win: mean over sliding windows of w points of their std
  double mean_abs_change = 0; // S_fluct: mean |a_{k+1} - a_k| over the second half
  double oscillation = 0;     // S_osc: mean |a_k - MA_w(a)_k| over the second half
  double worst_drop = 0;      // S_drawdown: max_{k<l} (a_k - a_l) over the whole curve
};

// requires values.size() >= 1; window >= 1.
Stability stability(std::span<const double> values, std::size_t window = 10);

// G = (S_baseline - S_method) / S_baseline * 100: "G% more stable" (NaN if S_baseline = 0).
double stability_gain(double baseline, double method);

// Population std of the second half (used for the train-loss variant S_loss_std).
double std_second_half(std::span<const double> values);

} // namespace dtsim::analysis

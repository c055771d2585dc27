// SPDX-License-Identifier: MIT
// Renders progress as "[ 42%] t=12.3s epoch 1.20 updates 2250 acc 0.781 ETA 14s".
#include "apps/progress_line.hpp"

#include <cstdio>

namespace dtsim::cli {

void ProgressLine::update(const Progress& p) {
  if (!enabled_)
    return;
  const double eta =
      p.fraction_done > 0.01 ? p.wall_seconds * (1 - p.fraction_done) / p.fraction_done : -1;
  char acc[16] = "  -  ";
  if (p.test_accuracy >= 0)
    std::snprintf(acc, sizeof acc, "%.3f", p.test_accuracy);
  char eta_text[24] = "?";
  if (eta >= 0)
    std::snprintf(eta_text, sizeof eta_text, "%.0fs", eta);
  std::fprintf(stderr, "\r[%3.0f%%] t=%.1fs epoch %.2f updates %lld acc %s ETA %s   ",
               100 * p.fraction_done, p.sim_time_s, p.epoch, static_cast<long long>(p.updates), acc,
               eta_text);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::finish() {
  if (drawn_)
    std::fputc('\n', stderr);
  drawn_ = false;
}

} // namespace dtsim::cli

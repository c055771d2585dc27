// SPDX-License-Identifier: MIT
// Renders progress as
// "[ 42%] sim t=12.3s epoch 1.20 updates 2250 loss 0.512 acc 0.781 | wall ETA 14s".
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
  char loss[24] = "  -  ";
  if (p.train_loss >= 0)
    std::snprintf(loss, sizeof loss, "%.3f", p.train_loss);
  char eta_text[24] = "?";
  if (eta >= 0)
    std::snprintf(eta_text, sizeof eta_text, "%.0fs", eta);
  std::fprintf(stderr,
               "\r[%3.0f%%] sim t=%.1fs epoch %.2f updates %lld loss %s acc %s | wall ETA %s   ",
               100 * p.fraction_done, p.sim_time_s, p.epoch, static_cast<long long>(p.updates),
               loss, acc, eta_text);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::finish() {
  if (drawn_)
    std::fputc('\n', stderr);
  drawn_ = false;
}

} // namespace dtsim::cli

// SPDX-License-Identifier: MIT
// A batched evaluation pass's per-node results beside the CPU model's, and the checks the
// evaluation pass tests make of them.
#pragma once

#include "models/model.hpp"

#include <cmath>
#include <cstdint>
#include <doctest/doctest.h>
#include <vector>

namespace dtsim::test {

struct EvalRun {
  std::vector<double> loss_sum;
  std::vector<std::int64_t> correct;
  std::vector<EvalResult> cpu;
};

// Every node's correct count equal to the CPU's, its loss sum within 1e-5.
inline void check_close(const EvalRun& r) {
  for (std::size_t b = 0; b < r.cpu.size(); ++b) {
    CAPTURE(b);
    CHECK(r.correct[b] == r.cpu[b].correct);
    CHECK(std::abs(r.loss_sum[b] - r.cpu[b].loss_sum) <= 1e-5 * std::abs(r.cpu[b].loss_sum));
  }
}

// The CPU's correct answers over all nodes (a comparison of zeros would prove nothing).
inline std::int64_t cpu_correct(const EvalRun& r) {
  std::int64_t right = 0;
  for (const EvalResult& e : r.cpu)
    right += e.correct;
  return right;
}

// Whether some node's loss sum is off the CPU's by more than 1e-3 (a wrong pass is caught).
inline bool some_differ(const EvalRun& r) {
  bool differs = false;
  for (std::size_t b = 0; b < r.cpu.size(); ++b)
    differs |= std::abs(r.loss_sum[b] - r.cpu[b].loss_sum) > 1e-3 * std::abs(r.cpu[b].loss_sum);
  return differs;
}

} // namespace dtsim::test

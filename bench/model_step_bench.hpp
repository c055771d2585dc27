// SPDX-License-Identifier: MIT
// Times one training step (loss_and_grad, optionally + SGD update) of a model on random data.
#pragma once

#include "models/model.hpp"

namespace dtsim {

struct StepBenchResult {
  int batch = 0;
  double seconds_per_step = 0.0;      // median over the timed steps
  double gflops = 0.0;                // flops_per_example * batch / seconds_per_step
  double steps_per_second = 0.0;      // 1 / seconds_per_step
  double seconds_per_step_best = 0.0; // fastest step: the figure least disturbed by other load
  double gflops_best = 0.0;
};

// Runs steps on one random batch (features U(-1, 1), labels 0 or 1, so valid for any model)
// for at least min_seconds and 20 steps after a warm-up. Times are CPU time of the calling
// thread, so that other processes on a shared machine do not count. A step is loss_and_grad, plus
// params -= lr * grad when `sgd_update` (memory-bound; not counted in the flops).
StepBenchResult bench_model_step(const Model& model, int num_features, int batch,
                                 double min_seconds, bool sgd_update = true);

} // namespace dtsim

// SPDX-License-Identifier: MIT
// Collects the gradients nodes start and runs them as one batch on a BatchedGradients backend.
#pragma once

#include "sim/engine/batched_gradients.hpp"

#include <cstdint>
#include <vector>

namespace dtsim {

class GradientSlot;

// A slot in batched mode hands its launch here instead of starting a task; the batch runs
// when the engine first needs any of its results (a join, or a read of a computing node's
// model). Every gradient started until then joins the batch: a synchronous round's n nodes
// form one, an asynchronous run's nodes join whichever batch is open when they start. This
// is sound because a gradient's inputs are fixed at its launch (the Algorithm hook contract:
// the engine leaves a computing node's model and private state alone until it joins), so
// running it later gives the same result. run_pending() runs on the calling (engine) thread:
// the algorithm's before_gradient hooks in parallel over nodes, the backend once, then the
// after_gradient hooks in parallel, the backend's finish() and then its losses (collect()),
// so that a device computes while the host runs the hooks.
class GradientBatcher {
public:
  GradientBatcher(BatchedGradients& backend, int max_jobs);

  void add(GradientSlot& slot);
  void run_pending();
  bool empty() const { return pending_.empty(); }

  // Statistics for the trace (wall times never feed the simulation).
  std::int64_t batches() const { return batches_; }
  std::int64_t jobs() const { return jobs_run_; }
  std::int64_t largest_batch() const { return largest_; }
  double gradient_wall_seconds() const { return gradient_wall_s_; }
  double hooks_wall_seconds() const { return hooks_wall_s_; }
  const BatchedGradients& backend() const { return backend_; }

private:
  BatchedGradients& backend_;
  std::size_t max_jobs_;
  std::vector<GradientSlot*> pending_;
  std::vector<GradientSlot*> running_;
  std::vector<GradientJob> jobs_;
  std::int64_t batches_ = 0;
  std::int64_t jobs_run_ = 0;
  std::int64_t largest_ = 0;
  double gradient_wall_s_ = 0;
  double hooks_wall_s_ = 0;
};

} // namespace dtsim

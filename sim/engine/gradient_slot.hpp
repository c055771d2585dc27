// SPDX-License-Identifier: MIT
// One node's in-flight gradient computation: fixed inputs, a oneTBB task, its outputs.
#pragma once

#include "data/dataset.hpp"
#include "models/model.hpp"
#include "sim/core/flat_vector.hpp"
#include "sim/core/sim_time.hpp"
#include "sim/engine/algorithm.hpp"
#include "sim/engine/example_order.hpp"
#include "sim/engine/gradient_batcher.hpp"
#include "sim/engine/task_scratch.hpp"

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <span>
#include <tbb/task_group.h>
#include <vector>

namespace dtsim {

// Buffers are sized once. launch() runs, as one oneTBB task: the algorithm's
// before_gradient hook on the node's model, the gather of the minibatch (indices and count
// fixed before launch), forward/backward, and the after_gradient hook. The minibatch, the
// workspace and (without keep_gradient) the gradient are the running thread's TaskScratch;
// with keep_gradient the node has its own gradient buffer, which grad() returns after join(). With
// enable_per_example(), the backward pass also writes per-example gradients (a
// num_params x batch buffer, allocated then) and the orderer observes them in the task. The model
// is used in place: the Context forbids the engine thread to write it while the task runs. join()
// waits for the task and frees the slot; wait() only waits. The result depends only on the inputs
// fixed at launch, never on which thread ran it or when.
//
// Batched mode (the second constructor): launch() hands the gradient to a GradientBatcher
// instead of starting a task, the node keeps its own gradient buffer, and join() or wait() of
// a gradient not yet computed runs the batcher's open batch first.
class GradientSlot {
public:
  GradientSlot(const Model& model, const Dataset& train, int batch_size, TaskScratchPool& scratch,
               bool keep_gradient);
  // Batched: `resident` when the backend keeps the models and gradients (no host gradient).
  GradientSlot(const Model& model, int batch_size, GradientBatcher& batcher, bool resident = false);

  // Room for a full batch; the orderer fills the first count() entries.
  std::span<std::uint32_t> indices() { return indices_; }
  void set_count(int count);
  int count() const { return count_; }
  // Allocates the per-example buffer (requires the model's support).
  void enable_per_example();
  std::size_t per_example_bytes() const {
    return static_cast<std::size_t>(per_example_.size()) * sizeof(float);
  }
  // `order` observes the per-example gradients when enable_per_example() was called. With
  // `on_working_copy` (per-node tasks only) the task runs on its thread's TaskScratch::model
  // instead of `params`, which it leaves untouched: the algorithm's before_gradient must
  // then write all of it (Algorithm::keep_model_inputs said so).
  void launch(std::span<float> params, Algorithm& algorithm, ExampleOrder& order, int node,
              bool on_working_copy = false);
  void join();
  void wait();
  bool busy() const { return busy_; }

  // The gradient of the last joined task; empty without keep_gradient.
  std::span<const float> grad() const {
    return {grad_.data(), static_cast<std::size_t>(grad_.size())};
  }
  double loss() const { return loss_; }
  double gradient_wall_seconds() const { return gradient_wall_s_; } // statistics only
  double hooks_wall_seconds() const { return hooks_wall_s_; }
  double order_wall_seconds() const { return order_wall_s_; }

  std::int64_t tag = 0;
  SimTime started;
  SimTime duration;

private:
  friend class GradientBatcher;
  // Batched mode, called by the batcher: the algorithm's hooks and the job they surround.
  void run_before_hook();
  GradientJob job();
  void run_after_hook();
  void complete(double loss); // the job's loss: the gradient is done

  const Model& model_;
  const Dataset* train_;     // per-node tasks only
  TaskScratchPool* scratch_; // per-node tasks only
  GradientBatcher* batcher_; // batched mode only
  // The launch's inputs, kept for a batched gradient until its batch runs.
  std::span<float> params_;
  Algorithm* algorithm_ = nullptr;
  int node_ = -1;
  bool pending_ = false;
  std::vector<std::uint32_t> indices_;
  Vec grad_;        // keep_gradient: the node's own; else empty
  Vec per_example_; // num_params x batch when enabled, else empty
  int count_ = 0;
  double loss_ = 0.0;
  double gradient_wall_s_ = 0.0;
  double hooks_wall_s_ = 0.0;
  double order_wall_s_ = 0.0;
  bool busy_ = false;
  tbb::task_group group_;
};

} // namespace dtsim

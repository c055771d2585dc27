// SPDX-License-Identifier: MIT
// Per-thread scratch memory of gradient tasks, so that it stays in the thread's cache.
#pragma once

#include "data/dataset.hpp"
#include "models/model.hpp"
#include "sim/core/flat_vector.hpp"

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <span>
#include <tbb/enumerable_thread_specific.h>
#include <vector>

namespace dtsim {

// What a gradient task writes and reads back within itself: the gathered minibatch, the
// model's workspace (activations, GEMM packing blocks) and, unless the algorithm reads the
// gradient after the task (Algorithm::reads_gradient_after_task), the gradient. One set per
// worker thread instead of one per node: a task then finds them in its core's cache, where a
// node's own copies would have been evicted by the other nodes' tasks since its last step
// (for the 32-node MLP run, a cold gradient buffer alone costs a read and a write-back of
// 0.94 MB per step). The same holds for a working copy of the model (`model`). Every task
// overwrites what it reads, so results do not depend on which thread's set a task used. Requires
// that nothing inside a gradient task (model, algorithm hooks, orderer) waits on other oneTBB work:
// a waiting thread may start another gradient task, which would take the same set.
struct TaskScratch {
  Eigen::MatrixXf batch;            // features x batch_size
  std::vector<std::int32_t> labels; // batch_size
  std::unique_ptr<Workspace> workspace;
  Vec grad; // num_params, or empty when the node keeps its own
  // num_params: the model a task works on when the engine keeps the node's model as its
  // inputs (Algorithm::keep_model_inputs); written by before_gradient, then read.
  Vec model;

  // Gathers the training examples `indices` (at most the batch size) into batch and labels;
  // the view of them.
  BatchView gather(const Dataset& train, std::span<const std::uint32_t> indices);
};

class TaskScratchPool {
public:
  TaskScratchPool(const Model& model, int num_features, int batch_size, bool with_gradient,
                  bool with_model);
  // The calling thread's set, made on its first call (once per thread, not per step).
  TaskScratch& local() { return sets_.local(); }

private:
  tbb::enumerable_thread_specific<TaskScratch> sets_;
};

} // namespace dtsim

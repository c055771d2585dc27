// SPDX-License-Identifier: MIT
// One node's in-flight gradient computation: fixed inputs, a oneTBB task, its outputs.
#pragma once

#include "data/dataset.hpp"
#include "models/model.hpp"
#include "sim/core/flat_vector.hpp"
#include "sim/core/sim_time.hpp"

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <tbb/task_group.h>

namespace dtsim {

// Buffers are sized once; launch() copies the minibatch indices in (the parameters are read
// in place: the Context forbids writing them while the task runs) and runs gather +
// forward/backward as a task; join() waits for it. The result depends only on the inputs
// fixed at launch, never on which thread ran it or when.
class GradientSlot {
public:
  GradientSlot(const Model& model, const Dataset& train, int batch_size);

  std::span<std::uint32_t> indices() { return indices_; }
  void launch(std::span<const float> params);
  void join();
  bool busy() const { return busy_; }

  std::span<const float> grad() const { return {grad_.data(), static_cast<std::size_t>(grad_.size())}; }
  double loss() const { return loss_; }
  double task_wall_seconds() const { return task_wall_s_; }

  std::int64_t tag = 0;
  SimTime started;
  SimTime duration;

private:
  const Model& model_;
  const Dataset& train_;
  std::vector<std::uint32_t> indices_;
  Eigen::MatrixXf batch_;
  std::vector<std::int32_t> labels_;
  std::unique_ptr<Workspace> workspace_;
  Vec grad_;
  double loss_ = 0.0;
  double task_wall_s_ = 0.0;
  bool busy_ = false;
  tbb::task_group group_;
};

} // namespace dtsim

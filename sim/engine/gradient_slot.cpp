// SPDX-License-Identifier: MIT
// Gather the minibatch and run forward/backward as a oneTBB task.
#include "sim/engine/gradient_slot.hpp"

#include "sim/core/errors.hpp"

#include <chrono>

namespace dtsim {

GradientSlot::GradientSlot(const Model& model, const Dataset& train, int batch_size)
    : model_(model), train_(train), indices_(static_cast<std::size_t>(batch_size)),
      batch_(train.num_features(), batch_size), labels_(static_cast<std::size_t>(batch_size)),
      workspace_(model.make_workspace(batch_size)),
      grad_(static_cast<Eigen::Index>(model.num_params())) {}

void GradientSlot::launch(std::span<const float> params) {
  DTSIM_ASSERT(!busy_, "a node started a gradient while one was in flight");
  busy_ = true;
  group_.run([this, params] {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t k = 0; k < indices_.size(); ++k) {
      const auto idx = static_cast<Eigen::Index>(indices_[k]);
      batch_.col(static_cast<Eigen::Index>(k)) = train_.features.col(idx);
      labels_[k] = train_.labels[static_cast<std::size_t>(idx)];
    }
    const BatchView view{batch_.data(), static_cast<int>(batch_.rows()),
                         static_cast<int>(batch_.cols()), labels_.data()};
    loss_ = model_.loss_and_grad(params, view, {grad_.data(), static_cast<std::size_t>(grad_.size())},
                                 *workspace_);
    // Wall time is a statistic for the benchmark only; it never feeds the simulation.
    task_wall_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
}

void GradientSlot::join() {
  DTSIM_ASSERT(busy_, "join() without a gradient in flight");
  group_.wait();
  busy_ = false;
}

} // namespace dtsim

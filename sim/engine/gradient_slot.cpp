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

void GradientSlot::launch(std::span<float> params, Algorithm& algorithm, int node) {
  DTSIM_ASSERT(!busy_, "a node started a gradient while one was in flight");
  busy_ = true;
  group_.run([this, params, &algorithm, node] {
    // Wall times are statistics for the benchmark only; they never feed the simulation.
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    algorithm.before_gradient(node, params);
    const auto t1 = Clock::now();
    for (std::size_t k = 0; k < indices_.size(); ++k) {
      const auto idx = static_cast<Eigen::Index>(indices_[k]);
      batch_.col(static_cast<Eigen::Index>(k)) = train_.features.col(idx);
      labels_[k] = train_.labels[static_cast<std::size_t>(idx)];
    }
    const BatchView view{batch_.data(), static_cast<int>(batch_.rows()),
                         static_cast<int>(batch_.cols()), labels_.data()};
    const std::span<float> grad{grad_.data(), static_cast<std::size_t>(grad_.size())};
    loss_ = model_.loss_and_grad(params, view, grad, *workspace_);
    const auto t2 = Clock::now();
    algorithm.after_gradient(node, params, grad);
    const auto t3 = Clock::now();
    gradient_wall_s_ = std::chrono::duration<double>(t2 - t1).count();
    hooks_wall_s_ = std::chrono::duration<double>((t1 - t0) + (t3 - t2)).count();
  });
}

void GradientSlot::join() {
  DTSIM_ASSERT(busy_, "join() without a gradient in flight");
  group_.wait();
  busy_ = false;
}

void GradientSlot::wait() {
  if (busy_)
    group_.wait();
}

} // namespace dtsim

// SPDX-License-Identifier: MIT
// Gather the minibatch and run forward/backward as a oneTBB task.
#include "sim/engine/gradient_slot.hpp"

#include "sim/core/errors.hpp"

#include <chrono>

namespace dtsim {

GradientSlot::GradientSlot(const Model& model, const Dataset& train, int batch_size,
                           TaskScratchPool& scratch, bool keep_gradient)
    : model_(model), train_(&train), scratch_(&scratch), batcher_(nullptr),
      indices_(static_cast<std::size_t>(batch_size)),
      grad_(keep_gradient ? static_cast<Eigen::Index>(model.num_params()) : 0), count_(batch_size) {
}

GradientSlot::GradientSlot(const Model& model, int batch_size, GradientBatcher& batcher,
                           bool resident)
    : model_(model), train_(nullptr), scratch_(nullptr), batcher_(&batcher),
      indices_(static_cast<std::size_t>(batch_size)),
      grad_(resident ? 0 : static_cast<Eigen::Index>(model.num_params())), count_(batch_size) {}

void GradientSlot::set_count(int count) {
  DTSIM_ASSERT(!busy_, "set_count() while a gradient is in flight");
  DTSIM_ASSERT(count >= 1 && static_cast<std::size_t>(count) <= indices_.size(),
               "batch count outside 1..batch_size");
  count_ = count;
}

void GradientSlot::enable_per_example() {
  DTSIM_ASSERT(batcher_ == nullptr, "batched gradients have no per-example gradients");
  DTSIM_ASSERT(model_.supports_per_example_grads(), "the model has no per-example gradients");
  per_example_.resize(static_cast<Eigen::Index>(model_.num_params() * indices_.size()));
}

void GradientSlot::launch(std::span<float> params, Algorithm& algorithm, ExampleOrder& order,
                          int node, bool on_working_copy) {
  DTSIM_ASSERT(!busy_, "a node started a gradient while one was in flight");
  busy_ = true;
  if (batcher_ != nullptr) {
    DTSIM_ASSERT(!on_working_copy, "a batched gradient has no working copy of the model");
    params_ = params;
    algorithm_ = &algorithm;
    node_ = node;
    pending_ = true;
    gradient_wall_s_ = hooks_wall_s_ = order_wall_s_ = 0; // the batcher keeps the batch's times
    batcher_->add(*this);
    return;
  }
  group_.run([this, node_params = params, &algorithm, &order, node, on_working_copy] {
    // Wall times are statistics for the benchmark only; they never feed the simulation.
    using Clock = std::chrono::steady_clock;
    TaskScratch& s = scratch_->local();
    const auto t0 = Clock::now();
    DTSIM_ASSERT(!on_working_copy || static_cast<std::size_t>(s.model.size()) == node_params.size(),
                 "the task scratch has no working copy of the model");
    const std::span<float> x =
        on_working_copy ? std::span<float>(s.model.data(), node_params.size()) : node_params;
    algorithm.before_gradient(node, x);
    const auto t1 = Clock::now();
    const auto n = static_cast<std::size_t>(count_);
    const BatchView view = s.gather(*train_, std::span<const std::uint32_t>(indices_).first(n));
    Vec& grad_buffer = grad_.size() > 0 ? grad_ : s.grad;
    const std::span<float> grad{grad_buffer.data(), static_cast<std::size_t>(grad_buffer.size())};
    auto t2 = t1;
    if (per_example_.size() > 0) {
      const std::span<float> per{per_example_.data(), model_.num_params() * n};
      loss_ = model_.loss_and_per_example_grads(x, view, grad, per, *s.workspace);
      t2 = Clock::now();
      order.observe(node, std::span<const std::uint32_t>(indices_).first(n), per);
    } else {
      loss_ = model_.loss_and_grad(x, view, grad, *s.workspace);
      t2 = Clock::now();
    }
    const auto t3 = Clock::now();
    algorithm.after_gradient(node, x, grad);
    const auto t4 = Clock::now();
    gradient_wall_s_ = std::chrono::duration<double>(t2 - t1).count();
    order_wall_s_ = std::chrono::duration<double>(t3 - t2).count();
    hooks_wall_s_ = std::chrono::duration<double>((t1 - t0) + (t4 - t3)).count();
  });
}

void GradientSlot::run_before_hook() {
  algorithm_->before_gradient(node_, params_);
}

GradientJob GradientSlot::job() {
  const auto n = static_cast<std::size_t>(count_);
  return GradientJob{params_,
                     std::span<const std::uint32_t>(indices_).first(n),
                     {grad_.data(), static_cast<std::size_t>(grad_.size())},
                     0.0,
                     node_};
}

void GradientSlot::run_after_hook() {
  algorithm_->after_gradient(node_, params_,
                             {grad_.data(), static_cast<std::size_t>(grad_.size())});
}

void GradientSlot::complete(double loss) {
  loss_ = loss;
  pending_ = false;
}

void GradientSlot::join() {
  DTSIM_ASSERT(busy_, "join() without a gradient in flight");
  wait();
  busy_ = false;
}

void GradientSlot::wait() {
  if (!busy_)
    return;
  if (batcher_ == nullptr)
    group_.wait();
  else if (pending_) {
    batcher_->run_pending();
    DTSIM_ASSERT(!pending_, "the batch holding this gradient did not complete");
  }
}

} // namespace dtsim

// SPDX-License-Identifier: MIT
// ASGD: asynchronous parameter server; every gradient is applied on arrival, however stale.
#pragma once

#include "sim/engine/algorithm.hpp"
#include "sim/optimizers/algorithm_setup.hpp"

#include <vector>

namespace dtsim {

// algorithms.md section 1. Workers pull the server model, compute one minibatch gradient,
// push it; the server applies it at once (w -= lr*u, u = g + wd*w, or server momentum
// M = mu*M + u, u = M), increments its version t, records staleness t-1-tau and replies
// with the new model. Keys: lr (> 0, default 0.05), momentum (server, [0,1), default 0),
// weight_decay (>= 0, default 0). Workers' copies (model in, gradient out) run in their
// gradient tasks; the server's update runs on the engine thread, as a single server would.
class Asgd final : public Algorithm {
public:
  Asgd(const Params& p, const AlgorithmSetup& setup);
  std::string describe() const override;
  void start(Context& ctx) override;
  void on_gradient(Context& ctx, int node, const GradientResult& r) override;
  void on_message(Context& ctx, const Message& msg) override;
  void eval_model(const Context& ctx, std::span<float> out) const override;
  bool has_node_models() const override { return false; }
  void before_gradient(int node, std::span<float> x) override;
  void after_gradient(int node, std::span<const float> x, std::span<float> grad) override;
  std::size_t state_bytes() const override;

  static constexpr std::int32_t kGradient = 1;
  static constexpr std::int32_t kModel = 2;

private:
  float lr_;
  double momentum_text_; // as configured, for describe()
  float momentum_;
  float weight_decay_;
  Vec w_;
  Vec m_;
  std::int64_t version_ = 0;
  struct Worker {
    SimTime wait_start;
    SharedBuffer pulled; // the server model to copy into x when the next task starts
    SharedBuffer out;    // the gradient, copied in the worker's task
  };
  std::vector<Worker> workers_;
};

} // namespace dtsim

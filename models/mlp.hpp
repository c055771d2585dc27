// SPDX-License-Identifier: MIT
// Multilayer perceptron with ReLU hidden layers and a softmax cross-entropy head.
#pragma once

#include "models/dense_layer.hpp"
#include "models/model.hpp"

#include <string>
#include <vector>

namespace dtsim {

// inputs -> [dense + ReLU] per hidden width -> dense -> softmax cross-entropy. With no hidden
// layer this is multinomial logistic regression (kind "softmax"), so both share one code path.
//
// Flat parameter layout: for each layer in order, W (out x in, column-major) then b (out).
// Initialisation: He-uniform U(+-sqrt(6 / fan_in)) for layers followed by a ReLU
// (He et al., arXiv:1502.01852), Glorot-uniform U(+-sqrt(6 / (fan_in + fan_out))) for the
// output layer (Glorot & Bengio, AISTATS 2010); biases 0.
// Forward and backward are one GEMM per layer and direction over the whole batch, on the
// workspace's preallocated buffers: a warmed-up call does not allocate.
class Mlp final : public Model {
public:
  // throws std::invalid_argument unless every size is >= 1 (and num_classes >= 2).
  Mlp(int num_inputs, std::vector<int> hidden, int num_classes);

  std::string describe() const override;
  std::size_t num_params() const override { return num_params_; }
  void init(std::span<float> params, Rng& rng) const override;
  std::unique_ptr<Workspace> make_workspace(int max_batch) const override;
  double loss_and_grad(std::span<const float> params, const BatchView& batch, std::span<float> grad,
                       Workspace& ws) const override;
  EvalResult evaluate(std::span<const float> params, const BatchView& batch,
                      Workspace& ws) const override;
  double flops_per_example() const override;
  // The batched backward pass also writes each example's gradient (outer products of the
  // stored layer inputs and deltas): no per-example forward pass and no extra workspace, so
  // the only memory cost is the caller's num_params() x batch.count output.
  bool supports_per_example_grads() const override { return true; }
  double loss_and_per_example_grads(std::span<const float> params, const BatchView& batch,
                                    std::span<float> grad, std::span<float> per_example,
                                    Workspace& ws) const override;

  const std::vector<DenseLayer>& layers() const { return layers_; }

private:
  class MlpWorkspace;
  MlpWorkspace& workspace_for(Workspace& ws, const BatchView& batch) const;
  // Runs every layer; returns the logits (classes x batch.count) in the workspace.
  ConstMatMap forward(std::span<const float> params, const BatchView& batch, MlpWorkspace& w) const;
  // loss_and_grad, plus the per-example gradients when per_example is not null.
  double backward(std::span<const float> params, const BatchView& batch, std::span<float> grad,
                  float* per_example, Workspace& ws) const;

  std::vector<DenseLayer> layers_;
  std::size_t num_params_ = 0;
};

} // namespace dtsim

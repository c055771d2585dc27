// SPDX-License-Identifier: MIT
// LeNet-style convolutional network: [conv + ReLU + 2x2 max pool] stages, then a dense stack.
#pragma once

#include "models/conv_layer.hpp"
#include "models/dense_layer.hpp"
#include "models/model.hpp"

#include <string>
#include <vector>

namespace dtsim {

// inputs (channels x height x width) -> per conv stage: conv kernel x kernel (stride 1, zero
// padding), ReLU, 2x2 max pool -> flatten -> [dense + ReLU] per hidden width -> dense ->
// softmax cross-entropy. LeNet-5 (LeCun et al. 1998, with ReLU and max pooling as usually
// trained today) is channels {6, 16}, kernel 5, hidden {120, 84}: on 1x28x28 with padding
// {2, 0} (the 32x32 canvas LeNet-5 was designed for) or on 3x32x32 with {0, 0}, the conv
// stages leave 16 x 5 x 5 = 400 features.
//
// Flat parameter layout: per conv stage in order, W (kernel x kernel x in x out channels, out
// fastest) then b (out); then per dense layer W (out x in, column-major) then b. The flattened
// feature index of the last pooled map is (y * width + x) * channels + c.
// Initialisation as in Mlp: He-uniform U(+-sqrt(6 / fan_in)) for every layer followed by a
// ReLU (fan_in = kernel^2 x in channels for a conv), Glorot-uniform at the output, biases 0.
//
// The conv stages run on lane-blocked maps (feature_map.hpp) with direct register-blocked
// kernels over the whole batch; the dense stack is the Mlp's GEMMs. Every buffer lives in the
// workspace: a warmed-up call does not allocate.
class Cnn final : public Model {
public:
  struct Config {
    std::string name = "cnn"; // for describe(): "lenet" or "cnn"
    std::vector<int> input_shape;
    std::vector<int> channels{6, 16};
    std::vector<int> padding{0, 0}; // one per conv stage
    int kernel = 5;
    std::vector<int> hidden{120, 84};
    int num_classes = 10;
  };

  // The reason `c` cannot be built ("" when it can): sizes < 1, padding >= kernel, or an
  // input too small for the stages (every conv must leave at least 2x2 for its pool).
  static std::string config_error(const Config& c);
  // Parameter count of `c` (which config_error accepts), in double so that huge widths can be
  // refused before anything is allocated.
  static double count_params(const Config& c);

  // throws std::invalid_argument with config_error(c) when it is not empty.
  explicit Cnn(Config c);

  std::string describe() const override;
  std::size_t num_params() const override { return num_params_; }
  void init(std::span<float> params, Rng& rng) const override;
  std::unique_ptr<Workspace> make_workspace(int max_batch) const override;
  double loss_and_grad(std::span<const float> params, const BatchView& batch, std::span<float> grad,
                       Workspace& ws) const override;
  EvalResult evaluate(std::span<const float> params, const BatchView& batch,
                      Workspace& ws) const override;
  double flops_per_example() const override;
  bool supports_per_example_grads() const override { return true; }
  double loss_and_per_example_grads(std::span<const float> params, const BatchView& batch,
                                    std::span<float> grad, std::span<float> per_example,
                                    Workspace& ws) const override;

  const std::vector<ConvLayer>& convs() const { return convs_; }
  const std::vector<DenseLayer>& dense() const { return dense_; }
  MapShape flat_shape() const; // the last pooled map, input of the dense stack

private:
  class CnnWorkspace;
  CnnWorkspace& workspace_for(Workspace& ws, const BatchView& batch) const;
  // Runs every layer; returns the logits (classes x batch.count) in the workspace.
  ConstMatMap forward(std::span<const float> params, const BatchView& batch, CnnWorkspace& w) const;
  // loss_and_grad, plus the per-example columns when `per_example` is not empty.
  double backward(std::span<const float> params, const BatchView& batch, std::span<float> grad,
                  std::span<float> per_example, CnnWorkspace& w) const;

  Config config_;
  std::vector<ConvLayer> convs_;
  std::vector<DenseLayer> dense_;
  std::size_t num_params_ = 0;
};

} // namespace dtsim

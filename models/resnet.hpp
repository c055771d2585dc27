// SPDX-License-Identifier: MIT
// The CIFAR ResNet of He et al. (2016) with GroupNorm: ResNet-20 and its deeper siblings.
#pragma once

#include "models/dense_layer.hpp"
#include "models/gemm_conv.hpp"
#include "models/group_norm.hpp"
#include "models/model.hpp"

#include <string>
#include <vector>

namespace dtsim {

// input (C x H x W) -> conv3x3 16, GN, ReLU -> 3 stages of `blocks` basic blocks with 16, 32
// and 64 channels (the first block of stages 2 and 3 halves the map with stride 2) -> global
// average pool -> dense -> softmax cross-entropy. A basic block is conv3x3, GN, ReLU, conv3x3,
// GN, + shortcut, ReLU; the shortcut is the identity, or where the block changes shape He et
// al.'s option A (the input subsampled 2:1, its channels zero-padded), which adds no
// parameters. blocks = 3 is ResNet-20 (0.27 M parameters on 3x32x32 input), 5 ResNet-32.
//
// Normalisation is GroupNorm (Wu & He 2018; `groups` groups of channels per layer, 2 by
// default as in Hsieh et al. 2020's decentralized ResNet-20) instead of BatchNorm, so that a
// node's model is its parameter vector alone: BatchNorm's running statistics would need a
// rule for how gossip averages them, and its batch statistics differ across non-IID nodes.
// Convolutions have no bias (each feeds a normalisation).
//
// Flat parameter layout, in the order the network runs: stem conv W, stem GN (gamma, beta);
// per block conv1 W, GN1, conv2 W, GN2; the dense head W (classes x 64, column-major) then b.
// Conv W is out x (3 * 3 * in), column-major, the patch row of tap (ky, kx) and input channel
// ci being (ky * 3 + kx) * in + ci (gemm_conv.hpp).
// Initialisation: He-uniform U(+-sqrt(6 / fan_in)) for every conv, gamma 1 and beta 0; the
// head U(+-1 / sqrt(fan_in)) (PyTorch's default for a linear layer: with Glorot's larger
// bound the initial loss on Fashion-MNIST was 3.4 instead of about ln 10), bias 0.
//
// Every conv is one GEMM per pass over an im2col patch matrix of the whole batch; activations
// are pixel-major (channels x pixels of every example). Every buffer lives in the workspace:
// a warmed-up call does not allocate.
class ResNet final : public Model {
public:
  struct Config {
    std::vector<int> input_shape; // channels, height, width
    int num_classes = 10;
    int blocks = 3; // per stage: depth = 6 * blocks + 2
    int groups = 2; // GroupNorm groups; divides 16
  };

  // The reason `c` cannot be built ("" when it can).
  static std::string config_error(const Config& c);
  static double count_params(const Config& c);
  // throws std::invalid_argument with config_error(c) when it is not empty.
  explicit ResNet(Config c);

  std::string describe() const override;
  std::size_t num_params() const override { return num_params_; }
  void init(std::span<float> params, Rng& rng) const override;
  std::unique_ptr<Workspace> make_workspace(int max_batch) const override;
  double loss_and_grad(std::span<const float> params, const BatchView& batch, std::span<float> grad,
                       Workspace& ws) const override;
  EvalResult evaluate(std::span<const float> params, const BatchView& batch,
                      Workspace& ws) const override;
  double flops_per_example() const override;
  // The workspace keeps every block's maps: about 1.6 MB per 3x32x32 example.
  int max_eval_batch() const override { return 32; }

  // The layers, for other implementations of the same network (the CUDA backend's batched
  // pass reads their shapes and parameter offsets).
  struct Block {
    GemmConv conv1, conv2;
    GroupNorm norm1, norm2;
  };
  const Config& config() const { return config_; }
  const GemmConv& stem() const { return stem_; }
  const GroupNorm& stem_norm() const { return stem_norm_; }
  const std::vector<Block>& blocks() const { return blocks_; }
  const DenseLayer& head() const { return head_; }

private:
  class ResNetWorkspace;

  ResNetWorkspace& workspace_for(Workspace& ws, const BatchView& batch) const;
  // Runs the network on the batch; returns the logits (classes x n) in the workspace.
  ConstMatMap forward(std::span<const float> params, const BatchView& batch,
                      ResNetWorkspace& w) const;
  void add_shortcut(const Block& b, const float* in, int n, float* out) const;
  void shortcut_backward(const Block& b, const float* d_out, int n, float* d_in) const;

  Config config_;
  GemmConv stem_;
  GroupNorm stem_norm_;
  std::vector<Block> blocks_;
  DenseLayer head_;
  std::size_t num_params_ = 0;
};

} // namespace dtsim

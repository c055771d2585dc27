// SPDX-License-Identifier: MIT
// Group normalisation (Wu & He 2018) of batch-major feature maps, with its backward pass.
#pragma once

#include <cstddef>
#include <span>

namespace dtsim {

// y = gamma_c (z - mean) / sqrt(var + eps) + beta_c, the mean and (biased) variance taken per
// example over the channels of one group and all pixels. No statistics cross examples or
// steps, so a node's model is its parameters alone: nothing like BatchNorm's running
// statistics needs a rule for how nodes would average them.
// Maps are channel-major over the batch ((pixels * n) x channels, column-major: example e's
// channel c is the `pixels` floats at c * pixels * n + e * pixels), as GemmConv writes them.
// Parameter layout at `offset`: gamma (channels), then beta (channels).
struct GroupNorm {
  int channels = 0;
  int groups = 1; // divides channels
  int pixels = 0; // per example
  std::size_t offset = 0;
  static constexpr float kEps = 1e-5f;

  std::size_t num_params() const { return 2 * static_cast<std::size_t>(channels); }
  // gamma = 1, beta = 0.
  void init(std::span<float> params) const;
  // y = norm(z) for n examples; y may be z. stats gets (mean, 1/std) per (example, group):
  // 2 * n * groups floats, which backward() reads.
  void forward(std::span<const float> params, const float* z, int n, float* y, float* stats) const;
  // From dy and the forward input z: dgamma, dbeta written into this layer's slice of `grad`,
  // dz overwritten (dz may be dy).
  void backward(std::span<const float> params, const float* z, const float* stats, int n,
                const float* dy, std::span<float> grad, float* dz) const;
};

} // namespace dtsim

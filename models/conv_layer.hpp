// SPDX-License-Identifier: MIT
// A 2-D convolution (square kernel, stride 1, zero padding) on lane-blocked feature maps.
#pragma once

#include "models/feature_map.hpp"

#include <cstddef>
#include <span>

namespace dtsim {

class Rng;

// z = W * x + b over a batch, for every output pixel, output channel and example. The kernels
// read the padded input map in place (an implicit im2col: no patch matrix is built or packed)
// and keep a tile of accumulators in registers, each register holding kLanes examples:
//   forward         z(pixel, co)  += W(k, co) x(pixel + k)      tile: 6 channels x 2 lane blocks
//   weight gradient dW(k, co)     += x(pixel + k) dz(pixel, co) tile: 3 k x 4 channels, per lane
//   input gradient  dx(pixel, ci) += W(k, co) dz(pixel - k, co) tile: 6 channels x 2 lane blocks
// where k runs over (ky, kx, ci). A full tile does 12 FMAs per 7 or 8 loads.
//
// Parameter layout at `offset`: W as kernel x kernel x in_channels x out_channels (ky, kx, ci,
// co; co fastest: the forward tile broadcasts consecutive weights), then b (out_channels).
// Maps: the input is (in_height + 2 pad) x (in_width + 2 pad) x in_channels with a zero border,
// the output (input - kernel + 1) squared x out_channels, both lane-blocked (feature_map.hpp).
struct ConvLayer {
  int in_channels = 0;
  int out_channels = 0;
  int kernel = 0;
  int pad = 0;
  int in_height = 0; // unpadded
  int in_width = 0;
  std::size_t offset = 0;

  MapShape input() const; // padded
  MapShape output() const;
  MapShape input_unpadded() const { return {in_height, in_width, in_channels}; }
  std::size_t num_weights() const;
  std::size_t num_params() const { return num_weights() + static_cast<std::size_t>(out_channels); }
  // Multiply-adds per example of the forward pass; the weight and input gradients take as many.
  double macs_per_example() const;
  // Floats of scratch memory the backward passes need.
  std::size_t scratch_floats() const;

  // W ~ U(-limit, limit) drawn in storage order; b = 0.
  void init(std::span<float> params, double limit, Rng& rng) const;
  // z = conv(x) + b for `blocks` lane blocks of x (input()) into z (output()).
  void forward(std::span<const float> params, const float* x, int blocks, float* z) const;
  // dW and db summed over every example of the blocks, written into this layer's slice of
  // `grad`. Lanes of dz past the batch must be zero.
  void backward_params(const float* x, const float* dz, int blocks, std::span<float> grad,
                       float* scratch) const;
  // Example n's own dW and db, times `scale`, into column n (this layer's slice) of the
  // column-major matrix `per_example` with leading dimension `ld`, for n < count.
  void backward_params_per_example(const float* x, const float* dz, int count, float scale,
                                   float* per_example, std::size_t ld, float* scratch) const;
  // dx = dL/dx on the unpadded input (input_unpadded()), overwritten.
  void backward_input(std::span<const float> params, const float* dz, int blocks, float* dx,
                      float* scratch) const;
};

} // namespace dtsim

// SPDX-License-Identifier: MIT
// A 2-D convolution of any stride as GEMMs over an im2col patch matrix (ResNet's layers).
#pragma once

#include "models/gemm.hpp"

#include <cstddef>
#include <span>

namespace dtsim {

class Rng;

// Where value (channel c, row y, column x) of example e lies in a batch of maps:
// data[e * example + c * channel + y * width + x] (rows are contiguous). Inputs from a dataset
// are one example after another (example = C*H*W, channel = H*W); maps inside the network are
// channel-major over the batch (channel = n*H*W, example = H*W), i.e. an (H*W*n) x C
// column-major matrix, one column per channel, which is what the layer's GEMM produces.
struct MapLayout {
  std::ptrdiff_t example = 0, channel = 0;
  static MapLayout dataset(int channels, int height, int width);
  static MapLayout batch_major(int height, int width, int n);
};

// z = patches(x) * W, no bias (ResNet's convolutions feed a normalisation). Output maps are
// channel-major over the batch: (out pixels * n) x out_channels.
// Parameter layout at `offset`: W as (kernel * kernel * in_channels) x out_channels,
// column-major, the patch column of tap (ky, kx) and input channel ci being
// (ky * kernel + kx) * in_channels + ci.
struct GemmConv {
  int in_channels = 0;
  int out_channels = 0;
  int in_height = 0;
  int in_width = 0;
  int kernel = 3;
  int stride = 1;
  int pad = 1;
  std::size_t offset = 0;

  int out_height() const { return (in_height + 2 * pad - kernel) / stride + 1; }
  int out_width() const { return (in_width + 2 * pad - kernel) / stride + 1; }
  int patch_size() const { return kernel * kernel * in_channels; }
  std::size_t in_pixels() const {
    return static_cast<std::size_t>(in_height) * static_cast<std::size_t>(in_width);
  }
  std::size_t out_pixels() const {
    return static_cast<std::size_t>(out_height()) * static_cast<std::size_t>(out_width());
  }
  std::size_t num_params() const {
    return static_cast<std::size_t>(out_channels) * static_cast<std::size_t>(patch_size());
  }
  double macs_per_example() const {
    return static_cast<double>(num_params()) * static_cast<double>(out_pixels());
  }
  // Examples per im2col chunk: the batch is processed a few examples at a time so that a
  // chunk's patch matrix (about 512 KiB) stays in the core's L2 cache between im2col, the
  // GEMM's packing and col2im, instead of streaming a matrix of 9x the layer's input size.
  int chunk_examples(int n) const;
  // Floats of the patch matrix of one chunk of a batch of up to max_batch examples.
  std::size_t patch_floats(int max_batch) const {
    return static_cast<std::size_t>(patch_size()) * out_pixels() *
           static_cast<std::size_t>(chunk_examples(max_batch));
  }
  // Makes `scratch` large enough for every product of this layer up to max_batch examples.
  void reserve(GemmScratch& scratch, int max_batch) const;

  // W ~ U(-limit, limit) drawn in storage order.
  void init(std::span<float> params, double limit, Rng& rng) const;
  // z = conv(x) for n examples of x laid out as `layout`; `patches` holds patch_floats(n).
  // The chunks depend only on the layer and n, and dW sums them in example order, so results
  // are reproducible whatever the thread.
  void forward(std::span<const float> params, const float* x, const MapLayout& layout, int n,
               float* patches, float* z, GemmScratch& scratch) const;
  // dW = patches(x)^T dz, written (not added) into this layer's slice of `grad`.
  void backward_params(const float* x, const MapLayout& layout, int n, const float* dz,
                       float* patches, std::span<float> grad, GemmScratch& scratch) const;
  // dx = conv^T(dz) on a batch-major input, overwritten ((in pixels * n) x in_channels).
  void backward_input(std::span<const float> params, const float* dz, int n, float* dpatches,
                      float* dx, GemmScratch& scratch) const;

private:
  // The patch matrix of examples [first, first + count) of x.
  void im2col(const float* x, const MapLayout& layout, int first, int count, float* patches) const;
};

} // namespace dtsim

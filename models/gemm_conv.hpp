// SPDX-License-Identifier: MIT
// A 2-D convolution of any stride as GEMMs over an im2col patch matrix (ResNet's layers).
#pragma once

#include "models/gemm.hpp"

#include <cstddef>
#include <span>

namespace dtsim {

class Rng;

// Where value (channel c, row y, column x) of example n lies in a batch of maps:
// data[n * example + c * channel + y * row + x * column]. Inputs from a dataset are planar
// (channel = H*W, row = W, column = 1); activations inside the network are pixel-major
// (channel = 1, column = C, row = W*C), i.e. a C x (H*W*N) column-major matrix with one column
// per pixel of each example, which is what the layer's GEMM produces.
struct MapLayout {
  std::ptrdiff_t example = 0, channel = 0, row = 0, column = 0;
  static MapLayout planar(int channels, int height, int width);
  static MapLayout pixel_major(int channels, int height, int width);
};

// z = W * patches(x), no bias (ResNet's convolutions feed a normalisation). Output maps are
// pixel-major, out_channels x (out_height * out_width * n).
// Parameter layout at `offset`: W as out_channels x (kernel * kernel * in_channels), column-major,
// the patch row of (ky, kx, ci) being (ky * kernel + kx) * in_channels + ci.
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
  int patch_rows() const { return kernel * kernel * in_channels; }
  std::size_t out_pixels() const {
    return static_cast<std::size_t>(out_height()) * static_cast<std::size_t>(out_width());
  }
  std::size_t num_params() const {
    return static_cast<std::size_t>(out_channels) * static_cast<std::size_t>(patch_rows());
  }
  double macs_per_example() const {
    return static_cast<double>(num_params()) * static_cast<double>(out_pixels());
  }
  // Floats of patch matrix for n examples.
  std::size_t patch_floats(int n) const {
    return static_cast<std::size_t>(patch_rows()) * out_pixels() * static_cast<std::size_t>(n);
  }
  // Makes `scratch` large enough for every product of this layer up to max_batch examples.
  void reserve(GemmScratch& scratch, int max_batch) const;

  // W ~ U(-limit, limit) drawn in storage order.
  void init(std::span<float> params, double limit, Rng& rng) const;
  // z = conv(x) for n examples of x laid out as `layout`; `patches` holds patch_floats(n).
  void forward(std::span<const float> params, const float* x, const MapLayout& layout, int n,
               float* patches, float* z, GemmScratch& scratch) const;
  // dW = dz patches(x)^T, written (not added) into this layer's slice of `grad`.
  void backward_params(const float* x, const MapLayout& layout, int n, const float* dz,
                       float* patches, std::span<float> grad, GemmScratch& scratch) const;
  // dx = conv^T(dz) on a pixel-major input, overwritten (in_channels x in pixels x n).
  void backward_input(std::span<const float> params, const float* dz, int n, float* dpatches,
                      float* dx, GemmScratch& scratch) const;

private:
  void im2col(const float* x, const MapLayout& layout, int n, float* patches) const;
};

} // namespace dtsim

// SPDX-License-Identifier: MIT
// Convolutions as GEMMs over im2col patch matrices of a batch of nodes: the shapes, the map
// addressing and the im2col / col2im element math shared by the ResNet and CNN passes
// (resnet_batch_math.hpp, cnn_batch_math.hpp).
#pragma once

#include "cuda/mlp_batch_math.hpp"

namespace dtsim::cuda {

// A square convolution with zero padding, its weights at `offset` (the pass that uses it
// says their layout and whether a bias follows). Patch column (ky * kernel + kx) * in + ci.
struct ConvShape {
  int in = 0, out = 0;             // channels
  int in_height = 0, in_width = 0; // of the input map, unpadded
  int stride = 1;
  std::size_t offset = 0;
  int kernel = 3;
  int pad = 1;
  DTSIM_HD int out_height() const { return (in_height + 2 * pad - kernel) / stride + 1; }
  DTSIM_HD int out_width() const { return (in_width + 2 * pad - kernel) / stride + 1; }
  DTSIM_HD int patch() const { return kernel * kernel * in; }
  DTSIM_HD std::size_t in_pixels() const { return static_cast<std::size_t>(in_height) * in_width; }
  DTSIM_HD std::size_t out_pixels() const {
    return static_cast<std::size_t>(out_height()) * out_width();
  }
  // Floats of n examples' output map, input map and patch matrix.
  DTSIM_HD std::size_t out_map(int n) const {
    return out_pixels() * out * static_cast<std::size_t>(n);
  }
  DTSIM_HD std::size_t in_map(int n) const {
    return in_pixels() * in * static_cast<std::size_t>(n);
  }
  DTSIM_HD std::size_t patches(int n) const {
    return out_pixels() * patch() * static_cast<std::size_t>(n);
  }
};

// A map of n examples as the kernels address it: example e's channel c starts at
// b * node + e * example + c * channel (rows of `width` contiguous floats).
struct MapView {
  std::size_t node = 0;
  std::size_t example = 0, channel = 0;
  // The dataset's layout (an example's channels one after another) and the network's
  // (a channel of every example one after another: (pixels * n) x channels, column-major).
  static MapView dataset(const ConvShape& c, int n) {
    return {c.in_map(n), c.in_pixels() * c.in, c.in_pixels()};
  }
  static MapView batch_major(const ConvShape& c, int n) {
    return {c.in_map(n), c.in_pixels(), c.in_pixels() * n};
  }
};

// Patch matrix (rows = out pixels * n) x (kernel^2 * in), column-major: row (e, oy, ox),
// column (ky * kernel + kx) * in + ci holds the input under that tap, or 0 in the padding.
DTSIM_HD inline void im2col_element(const float* x, MapView v, const ConvShape& c, int n,
                                    float* patches, int b, std::size_t i) {
  const std::size_t rows = c.out_pixels() * n;
  const std::size_t row = i % rows;
  const int q = static_cast<int>(i / rows);
  const int tap = q / c.in, ci = q % c.in;
  const int e = static_cast<int>(row / c.out_pixels());
  const int p = static_cast<int>(row % c.out_pixels());
  const int iy = p / c.out_width() * c.stride + tap / c.kernel - c.pad;
  const int ix = p % c.out_width() * c.stride + tap % c.kernel - c.pad;
  float value = 0.0f;
  if (iy >= 0 && iy < c.in_height && ix >= 0 && ix < c.in_width)
    value = x[b * v.node + e * v.example + ci * v.channel +
              static_cast<std::size_t>(iy) * c.in_width + ix];
  patches[b * rows * c.patch() + i] = value;
}

// col2im: input element i (batch-major) of dx is the sum, over taps (ky, kx) in order, of
// the patch entries copied from it (a gather: no two threads write one value).
DTSIM_HD inline void col2im_element(const float* dpatches, const ConvShape& c, int n, float* dx,
                                    int b, std::size_t i) {
  const std::size_t plane = c.in_pixels() * n;
  const std::size_t rows = c.out_pixels() * n;
  const int ci = static_cast<int>(i / plane);
  const int e = static_cast<int>(i % plane / c.in_pixels());
  const int p = static_cast<int>(i % c.in_pixels());
  const int iy = p / c.in_width, ix = p % c.in_width;
  const float* node = dpatches + b * rows * c.patch();
  float sum = 0.0f;
  for (int ky = 0; ky < c.kernel; ++ky) {
    const int sy = iy + c.pad - ky; // oy * stride
    if (sy < 0 || sy % c.stride != 0 || sy / c.stride >= c.out_height())
      continue;
    for (int kx = 0; kx < c.kernel; ++kx) {
      const int sx = ix + c.pad - kx;
      if (sx < 0 || sx % c.stride != 0 || sx / c.stride >= c.out_width())
        continue;
      const std::size_t row = static_cast<std::size_t>(e) * c.out_pixels() +
                              static_cast<std::size_t>(sy / c.stride) * c.out_width() +
                              sx / c.stride;
      sum += node[static_cast<std::size_t>((ky * c.kernel + kx) * c.in + ci) * rows + row];
    }
  }
  dx[b * c.in_map(n) + i] = sum;
}

} // namespace dtsim::cuda

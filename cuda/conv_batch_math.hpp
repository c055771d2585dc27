// SPDX-License-Identifier: MIT
// Convolutions as GEMMs over im2col patch matrices of a batch of nodes: the shapes, the map
// addressing and the im2col / col2im element math shared by the ResNet and CNN passes
// (resnet_batch_math.hpp, cnn_batch_math.hpp).
#pragma once

#include "cuda/mlp_batch_math.hpp"

#include <limits>
#include <string>

namespace dtsim::cuda {

// The largest kernel the passes take (col2im keeps a position's taps in registers).
inline constexpr int kMaxConvKernel = 7;
inline constexpr int kMaxTaps = kMaxConvKernel * kMaxConvKernel;

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

// Why the passes cannot run conv `c` on minibatches of batch_size ("" when they can): a
// kernel wider than kMaxConvKernel, or more patch rows or map positions per node than the
// 32-bit index math and cuBLAS's int dimensions take. Checked when a device pass is made.
inline std::string conv_shape_problem(const ConvShape& c, int batch_size) {
  if (c.kernel < 1 || c.kernel > kMaxConvKernel)
    return "kernel " + std::to_string(c.kernel) + " (the device passes take 1 to " +
           std::to_string(kMaxConvKernel) + ")";
  constexpr auto kLimit = static_cast<std::size_t>(std::numeric_limits<int>::max());
  if (c.out_pixels() * static_cast<std::size_t>(batch_size) > kLimit ||
      c.in_pixels() * static_cast<std::size_t>(batch_size) > kLimit)
    return "maps of " + std::to_string(c.in_pixels()) + " pixels x batch " +
           std::to_string(batch_size) + " exceed the device passes' 2^31 positions";
  return "";
}

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
// One call fills one row: its position is worked out once (integer division is the costly
// part on a GPU), then every column is a store that neighbouring rows make side by side.
DTSIM_HD inline void im2col_row(const float* x, MapView v, const ConvShape& c, int n,
                                float* patches, int b, std::size_t r) {
  const auto rows = static_cast<unsigned>(c.out_pixels() * n);
  const auto row = static_cast<unsigned>(r);
  const auto out_pixels = static_cast<unsigned>(c.out_pixels());
  const auto ow = static_cast<unsigned>(c.out_width());
  const unsigned e = row / out_pixels, p = row % out_pixels;
  const int oy = static_cast<int>(p / ow) * c.stride - c.pad;
  const int ox = static_cast<int>(p % ow) * c.stride - c.pad;
  const float* image = x + b * v.node + e * v.example;
  float* out = patches + b * static_cast<std::size_t>(rows) * c.patch() + row;
  for (int ky = 0; ky < c.kernel; ++ky)
    for (int kx = 0; kx < c.kernel; ++kx) {
      const int iy = oy + ky, ix = ox + kx;
      const bool inside = iy >= 0 && iy < c.in_height && ix >= 0 && ix < c.in_width;
      const float* pixel = image + (inside ? iy * c.in_width + ix : 0);
      float* column = out + static_cast<std::size_t>((ky * c.kernel + kx) * c.in) * rows;
      for (int ci = 0; ci < c.in; ++ci)
        column[static_cast<std::size_t>(ci) * rows] = inside ? pixel[ci * v.channel] : 0.0f;
    }
}

// col2im: input element (ci, e, iy, ix) (batch-major) of dx is the sum, over taps (ky, kx)
// in order, of the patch entries copied from it (a gather: no two threads write one value).
// One call does one position (e, iy, ix) for every channel; the position's patch rows are
// worked out once.
DTSIM_HD inline void col2im_position(const float* dpatches, const ConvShape& c, int n, float* dx,
                                     int b, std::size_t position) {
  const auto rows = static_cast<unsigned>(c.out_pixels() * n);
  const auto pixels = static_cast<unsigned>(c.in_pixels());
  const auto pos = static_cast<unsigned>(position);
  const unsigned e = pos / pixels, p = pos % pixels;
  const int iy = static_cast<int>(p / static_cast<unsigned>(c.in_width));
  const int ix = static_cast<int>(p % static_cast<unsigned>(c.in_width));
  // Patch row and column block of each tap that reads this position, in tap order.
  unsigned tap_row[kMaxTaps], tap_column[kMaxTaps];
  int taps = 0;
  for (int ky = 0; ky < c.kernel; ++ky) {
    const int sy = iy + c.pad - ky; // oy * stride
    if (sy < 0 || sy % c.stride != 0 || sy / c.stride >= c.out_height())
      continue;
    for (int kx = 0; kx < c.kernel; ++kx) {
      const int sx = ix + c.pad - kx;
      if (sx < 0 || sx % c.stride != 0 || sx / c.stride >= c.out_width())
        continue;
      tap_row[taps] = e * static_cast<unsigned>(c.out_pixels()) +
                      static_cast<unsigned>(sy / c.stride * c.out_width() + sx / c.stride);
      tap_column[taps] = static_cast<unsigned>((ky * c.kernel + kx) * c.in);
      ++taps;
    }
  }
  const float* node = dpatches + b * static_cast<std::size_t>(rows) * c.patch();
  float* out = dx + b * c.in_map(n) + pos;
  for (int ci = 0; ci < c.in; ++ci) {
    float sum = 0.0f;
    for (int t = 0; t < taps; ++t)
      sum += node[static_cast<std::size_t>(tap_column[t] + ci) * rows + tap_row[t]];
    out[static_cast<std::size_t>(ci) * pixels * n] = sum;
  }
}

} // namespace dtsim::cuda

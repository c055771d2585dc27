// SPDX-License-Identifier: MIT
// GemmConv: im2col, one GEMM per pass, col2im.
#include "models/gemm_conv.hpp"

#include "sim/core/rng.hpp"

#include <algorithm>

namespace dtsim {

MapLayout MapLayout::planar(int channels, int height, int width) {
  const std::ptrdiff_t hw = static_cast<std::ptrdiff_t>(height) * width;
  return {hw * channels, hw, width, 1};
}

MapLayout MapLayout::pixel_major(int channels, int height, int width) {
  const std::ptrdiff_t hw = static_cast<std::ptrdiff_t>(height) * width;
  return {hw * channels, 1, static_cast<std::ptrdiff_t>(width) * channels, channels};
}

void GemmConv::reserve(GemmScratch& scratch, int max_batch) const {
  // Eigen's cache blocking is not monotone in the sizes: every batch size is visited.
  for (int n = 1; n <= max_batch; ++n) {
    const auto p = static_cast<Eigen::Index>(out_pixels()) * n;
    scratch.reserve(out_channels, p, patch_rows()); // forward
    scratch.reserve(out_channels, patch_rows(), p); // weight gradient
    scratch.reserve(patch_rows(), p, out_channels); // input gradient
  }
}

void GemmConv::init(std::span<float> params, double limit, Rng& rng) const {
  for (std::size_t k = 0; k < num_params(); ++k)
    params[offset + k] = static_cast<float>(rng.uniform(-limit, limit));
}

// Column q = (n, oy, ox) of the patch matrix holds, at row (ky * kernel + kx) * C + ci, the
// input value under kernel tap (ky, kx) of output pixel (oy, ox), or 0 in the padding.
void GemmConv::im2col(const float* x, const MapLayout& layout, int n, float* patches) const {
  const int rows = patch_rows();
  float* col = patches;
  for (int e = 0; e < n; ++e)
    for (int oy = 0; oy < out_height(); ++oy)
      for (int ox = 0; ox < out_width(); ++ox, col += rows) {
        float* dst = col;
        for (int ky = 0; ky < kernel; ++ky) {
          const int iy = oy * stride + ky - pad;
          for (int kx = 0; kx < kernel; ++kx, dst += in_channels) {
            const int ix = ox * stride + kx - pad;
            if (iy < 0 || iy >= in_height || ix < 0 || ix >= in_width) {
              std::fill(dst, dst + in_channels, 0.0f);
              continue;
            }
            const float* src = x + e * layout.example + iy * layout.row + ix * layout.column;
            if (layout.channel == 1)
              std::copy(src, src + in_channels, dst);
            else
              for (int ci = 0; ci < in_channels; ++ci)
                dst[ci] = src[ci * layout.channel];
          }
        }
      }
}

void GemmConv::forward(std::span<const float> params, const float* x, const MapLayout& layout,
                       int n, float* patches, float* z, GemmScratch& scratch) const {
  im2col(x, layout, n, patches);
  const auto p = static_cast<Eigen::Index>(out_pixels()) * n;
  gemm(false, mat_map(params.data() + offset, out_channels, patch_rows(), out_channels), false,
       mat_map(static_cast<const float*>(patches), patch_rows(), p, patch_rows()),
       mat_map(z, out_channels, p, out_channels), GemmInit::Zero, nullptr, scratch);
}

void GemmConv::backward_params(const float* x, const MapLayout& layout, int n, const float* dz,
                               float* patches, std::span<float> grad, GemmScratch& scratch) const {
  im2col(x, layout, n, patches);
  const auto p = static_cast<Eigen::Index>(out_pixels()) * n;
  gemm(false, mat_map(dz, out_channels, p, out_channels), true,
       mat_map(static_cast<const float*>(patches), patch_rows(), p, patch_rows()),
       mat_map(grad.data() + offset, out_channels, patch_rows(), out_channels), GemmInit::Zero,
       nullptr, scratch);
}

void GemmConv::backward_input(std::span<const float> params, const float* dz, int n,
                              float* dpatches, float* dx, GemmScratch& scratch) const {
  const int rows = patch_rows();
  const auto p = static_cast<Eigen::Index>(out_pixels()) * n;
  gemm(true, mat_map(params.data() + offset, out_channels, rows, out_channels), false,
       mat_map(dz, out_channels, p, out_channels), mat_map(dpatches, rows, p, rows), GemmInit::Zero,
       nullptr, scratch);
  // col2im: every patch entry adds back to the input value it was copied from, in a fixed order.
  const MapLayout layout = MapLayout::pixel_major(in_channels, in_height, in_width);
  std::fill(dx, dx + static_cast<std::size_t>(layout.example) * static_cast<std::size_t>(n), 0.0f);
  const float* col = dpatches;
  for (int e = 0; e < n; ++e)
    for (int oy = 0; oy < out_height(); ++oy)
      for (int ox = 0; ox < out_width(); ++ox, col += rows) {
        const float* src = col;
        for (int ky = 0; ky < kernel; ++ky) {
          const int iy = oy * stride + ky - pad;
          for (int kx = 0; kx < kernel; ++kx, src += in_channels) {
            const int ix = ox * stride + kx - pad;
            if (iy < 0 || iy >= in_height || ix < 0 || ix >= in_width)
              continue;
            float* dst = dx + e * layout.example + iy * layout.row + ix * layout.column;
            for (int ci = 0; ci < in_channels; ++ci)
              dst[ci] += src[ci];
          }
        }
      }
}

} // namespace dtsim

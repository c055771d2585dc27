// SPDX-License-Identifier: MIT
// GemmConv: im2col, one GEMM per pass, col2im.
#include "models/gemm_conv.hpp"

#include "sim/core/rng.hpp"

#include <algorithm>

namespace dtsim {

MapLayout MapLayout::dataset(int channels, int height, int width) {
  const std::ptrdiff_t hw = static_cast<std::ptrdiff_t>(height) * width;
  return {hw * channels, hw};
}

MapLayout MapLayout::batch_major(int height, int width, int n) {
  const std::ptrdiff_t hw = static_cast<std::ptrdiff_t>(height) * width;
  return {hw, hw * n};
}

void GemmConv::reserve(GemmScratch& scratch, int max_batch) const {
  // Eigen's cache blocking is not monotone in the sizes: every batch size is visited.
  for (int n = 1; n <= max_batch; ++n)
    for (int count : {chunk_examples(n), n % chunk_examples(n)}) {
      if (count == 0)
        continue;
      const auto rows = static_cast<Eigen::Index>(out_pixels()) * count;
      scratch.reserve(rows, out_channels, patch_size()); // forward
      scratch.reserve(patch_size(), out_channels, rows); // weight gradient
      scratch.reserve(rows, patch_size(), out_channels); // input gradient
    }
}

void GemmConv::init(std::span<float> params, double limit, Rng& rng) const {
  for (std::size_t k = 0; k < num_params(); ++k)
    params[offset + k] = static_cast<float>(rng.uniform(-limit, limit));
}

// The range of output columns ox whose tap kx reads inside the input row: ox in
// [first, last), so that the rest read the zero padding.
namespace {
struct Span {
  int first, last;
};
Span inside(int out, int stride, int tap, int pad, int in) {
  // ix = ox * stride + tap - pad must lie in [0, in).
  int first = 0;
  while (first < out && first * stride + tap - pad < 0)
    ++first;
  int last = out;
  while (last > first && (last - 1) * stride + tap - pad >= in)
    --last;
  return {first, last};
}
} // namespace

// Column (ky * kernel + kx) * C + ci of the patch matrix holds, at row (e, oy, ox), the input
// value of channel ci under tap (ky, kx) of output pixel (oy, ox), or 0 in the padding: a
// shifted (and for stride 2 subsampled) copy of the channel, row by row.
int GemmConv::chunk_examples(int n) const {
  constexpr std::size_t kChunkFloats = 128 * 1024; // 512 KiB of patches
  const std::size_t per_example = static_cast<std::size_t>(patch_size()) * out_pixels();
  return std::clamp(static_cast<int>(kChunkFloats / std::max<std::size_t>(per_example, 1)), 1,
                    std::max(n, 1));
}

void GemmConv::im2col(const float* x, const MapLayout& layout, int first, int count,
                      float* patches) const {
  const int oh = out_height(), ow = out_width();
  const std::size_t rows = out_pixels() * static_cast<std::size_t>(count);
  for (int ky = 0; ky < kernel; ++ky)
    for (int kx = 0; kx < kernel; ++kx) {
      const Span cols = inside(ow, stride, kx, pad, in_width);
      for (int ci = 0; ci < in_channels; ++ci) {
        float* column =
            patches + static_cast<std::size_t>((ky * kernel + kx) * in_channels + ci) * rows;
        for (int e = 0; e < count; ++e) {
          const float* channel = x + (first + e) * layout.example + ci * layout.channel;
          for (int oy = 0; oy < oh; ++oy) {
            float* dst = column + (static_cast<std::size_t>(e) * oh + oy) * ow;
            const int iy = oy * stride + ky - pad;
            if (iy < 0 || iy >= in_height) {
              std::fill(dst, dst + ow, 0.0f);
              continue;
            }
            const float* __restrict row = channel + static_cast<std::ptrdiff_t>(iy) * in_width;
            float* __restrict out = dst;
            const int shift = kx - pad; // input column of ox = ox * stride + shift, inside
            for (int ox = 0; ox < cols.first; ++ox)
              out[ox] = 0.0f;
            if (stride == 1)
              for (int ox = cols.first; ox < cols.last; ++ox)
                out[ox] = row[ox + shift];
            else
              for (int ox = cols.first; ox < cols.last; ++ox)
                out[ox] = row[ox * stride + shift];
            for (int ox = cols.last; ox < ow; ++ox)
              out[ox] = 0.0f;
          }
        }
      }
    }
}

void GemmConv::forward(std::span<const float> params, const float* x, const MapLayout& layout,
                       int n, float* patches, float* z, GemmScratch& scratch) const {
  const auto p = static_cast<Eigen::Index>(out_pixels()) * n; // rows of z
  const int chunk = chunk_examples(n);
  for (int first = 0; first < n; first += chunk) {
    const int count = std::min(chunk, n - first);
    const auto rows = static_cast<Eigen::Index>(out_pixels()) * count;
    im2col(x, layout, first, count, patches);
    gemm(false, mat_map(static_cast<const float*>(patches), rows, patch_size(), rows), false,
         mat_map(params.data() + offset, patch_size(), out_channels, patch_size()),
         mat_map(z + static_cast<std::ptrdiff_t>(out_pixels()) * first, rows, out_channels, p),
         GemmInit::Zero, nullptr, scratch);
  }
}

void GemmConv::backward_params(const float* x, const MapLayout& layout, int n, const float* dz,
                               float* patches, std::span<float> grad, GemmScratch& scratch) const {
  const auto p = static_cast<Eigen::Index>(out_pixels()) * n; // rows of dz
  const int chunk = chunk_examples(n);
  for (int first = 0; first < n; first += chunk) {
    const int count = std::min(chunk, n - first);
    const auto rows = static_cast<Eigen::Index>(out_pixels()) * count;
    im2col(x, layout, first, count, patches);
    gemm(true, mat_map(static_cast<const float*>(patches), rows, patch_size(), rows), false,
         mat_map(dz + static_cast<std::ptrdiff_t>(out_pixels()) * first, rows, out_channels, p),
         mat_map(grad.data() + offset, patch_size(), out_channels, patch_size()),
         first == 0 ? GemmInit::Zero : GemmInit::Accumulate, nullptr, scratch);
  }
}

void GemmConv::backward_input(std::span<const float> params, const float* dz, int n,
                              float* dpatches, float* dx, GemmScratch& scratch) const {
  const auto p = static_cast<Eigen::Index>(out_pixels()) * n; // rows of dz
  const MapLayout layout = MapLayout::batch_major(in_height, in_width, n);
  std::fill(dx, dx + in_pixels() * static_cast<std::size_t>(n * in_channels), 0.0f);
  const int oh = out_height(), ow = out_width();
  const int chunk = chunk_examples(n);
  for (int first = 0; first < n; first += chunk) {
    const int count = std::min(chunk, n - first);
    const auto rows = static_cast<Eigen::Index>(out_pixels()) * count;
    gemm(false,
         mat_map(dz + static_cast<std::ptrdiff_t>(out_pixels()) * first, rows, out_channels, p),
         true, mat_map(params.data() + offset, patch_size(), out_channels, patch_size()),
         mat_map(dpatches, rows, patch_size(), rows), GemmInit::Zero, nullptr, scratch);
    // col2im: every patch entry adds back to the input value it was copied from, in a fixed
    // order.
    for (int ky = 0; ky < kernel; ++ky)
      for (int kx = 0; kx < kernel; ++kx) {
        const Span cols = inside(ow, stride, kx, pad, in_width);
        for (int ci = 0; ci < in_channels; ++ci) {
          const float* column =
              dpatches + static_cast<std::size_t>((ky * kernel + kx) * in_channels + ci) *
                             static_cast<std::size_t>(rows);
          for (int e = 0; e < count; ++e) {
            float* channel = dx + (first + e) * layout.example + ci * layout.channel;
            for (int oy = 0; oy < oh; ++oy) {
              const int iy = oy * stride + ky - pad;
              if (iy < 0 || iy >= in_height)
                continue;
              const float* __restrict src = column + (static_cast<std::size_t>(e) * oh + oy) * ow;
              float* __restrict row = channel + static_cast<std::ptrdiff_t>(iy) * in_width;
              const int shift = kx - pad;
              if (stride == 1)
                for (int ox = cols.first; ox < cols.last; ++ox)
                  row[ox + shift] += src[ox];
              else
                for (int ox = cols.first; ox < cols.last; ++ox)
                  row[ox * stride + shift] += src[ox];
            }
          }
        }
      }
  }
}

} // namespace dtsim

// SPDX-License-Identifier: MIT
// GroupNorm forward and backward over contiguous per-example channel segments.
#include "models/group_norm.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

namespace dtsim {
namespace {

using Segment = Eigen::Map<const Eigen::ArrayXf>;
using MutableSegment = Eigen::Map<Eigen::ArrayXf>;

} // namespace

void GroupNorm::init(std::span<float> params) const {
  const auto c = static_cast<std::size_t>(channels);
  std::fill_n(params.data() + offset, c, 1.0f);
  std::fill_n(params.data() + offset + c, c, 0.0f);
}

void GroupNorm::forward(std::span<const float> params, const float* z, int n, float* y,
                        float* stats) const {
  const int per_group = channels / groups;
  const float* gamma = params.data() + offset;
  const float* beta = gamma + channels;
  const std::size_t stride = static_cast<std::size_t>(pixels) * static_cast<std::size_t>(n);
  const auto count = static_cast<float>(per_group * pixels);
  auto at = [&](int e, int c) { // example e's channel c
    return static_cast<std::size_t>(c) * stride + static_cast<std::size_t>(e) * pixels;
  };
  for (int e = 0; e < n; ++e)
    for (int g = 0; g < groups; ++g) {
      const int c0 = g * per_group;
      float sum = 0;
      for (int c = c0; c < c0 + per_group; ++c)
        sum += Segment(z + at(e, c), pixels).sum();
      const float mean = sum / count;
      float squares = 0; // two passes: no cancellation when the mean is large
      for (int c = c0; c < c0 + per_group; ++c)
        squares += (Segment(z + at(e, c), pixels) - mean).square().sum();
      const float rstd = 1.0f / std::sqrt(squares / count + kEps);
      float* s = stats + 2 * (static_cast<std::size_t>(e) * groups + g);
      s[0] = mean;
      s[1] = rstd;
      for (int c = c0; c < c0 + per_group; ++c)
        MutableSegment(y + at(e, c), pixels) =
            (Segment(z + at(e, c), pixels) - mean) * (gamma[c] * rstd) + beta[c];
    }
}

void GroupNorm::backward(std::span<const float> params, const float* z, const float* stats, int n,
                         const float* dy, std::span<float> grad, float* dz) const {
  const int per_group = channels / groups;
  const float* gamma = params.data() + offset;
  float* dgamma = grad.data() + offset;
  float* dbeta = dgamma + channels;
  const std::size_t stride = static_cast<std::size_t>(pixels) * static_cast<std::size_t>(n);
  const auto count = static_cast<float>(per_group * pixels);
  auto at = [&](int e, int c) { // example e's channel c
    return static_cast<std::size_t>(c) * stride + static_cast<std::size_t>(e) * pixels;
  };
  std::fill_n(dgamma, 2 * static_cast<std::size_t>(channels), 0.0f);
  for (int e = 0; e < n; ++e)
    for (int g = 0; g < groups; ++g) {
      const int c0 = g * per_group;
      const float* s = stats + 2 * (static_cast<std::size_t>(e) * groups + g);
      const float mean = s[0], rstd = s[1];
      // With xhat = (z - mean) rstd and dxhat = gamma dy:
      // dz = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)) over the group.
      float sum_dxhat = 0, sum_dxhat_xhat = 0;
      for (int c = c0; c < c0 + per_group; ++c) {
        const Segment d(dy + at(e, c), pixels);
        const float dg = (d * ((Segment(z + at(e, c), pixels) - mean) * rstd)).sum();
        const float db = d.sum();
        dgamma[c] += dg; // examples in order
        dbeta[c] += db;
        sum_dxhat += gamma[c] * db;
        sum_dxhat_xhat += gamma[c] * dg;
      }
      const float mean_dxhat = sum_dxhat / count;
      const float mean_dxhat_xhat = sum_dxhat_xhat / count;
      for (int c = c0; c < c0 + per_group; ++c) {
        const Segment d(dy + at(e, c), pixels);
        const auto xhat = (Segment(z + at(e, c), pixels) - mean) * rstd;
        MutableSegment(dz + at(e, c), pixels) =
            rstd * (gamma[c] * d - mean_dxhat - xhat * mean_dxhat_xhat);
      }
    }
}

} // namespace dtsim

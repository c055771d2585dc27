// SPDX-License-Identifier: MIT
// GroupNorm forward and backward; sums in double, in a fixed order.
#include "models/group_norm.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim {

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
  const double count = static_cast<double>(per_group) * pixels;
  for (int e = 0; e < n; ++e) {
    const std::size_t first = static_cast<std::size_t>(e) * pixels * channels;
    for (int g = 0; g < groups; ++g) {
      const int c0 = g * per_group;
      double sum = 0;
      for (int p = 0; p < pixels; ++p)
        for (int c = c0; c < c0 + per_group; ++c)
          sum += static_cast<double>(z[first + static_cast<std::size_t>(p) * channels + c]);
      const double mean = sum / count;
      double squares = 0; // two passes: no cancellation when the mean is large
      for (int p = 0; p < pixels; ++p)
        for (int c = c0; c < c0 + per_group; ++c) {
          const double d =
              static_cast<double>(z[first + static_cast<std::size_t>(p) * channels + c]) - mean;
          squares += d * d;
        }
      const auto m = static_cast<float>(mean);
      const auto rstd = static_cast<float>(1.0 / std::sqrt(squares / count + kEps));
      float* s = stats + 2 * (static_cast<std::size_t>(e) * groups + g);
      s[0] = m;
      s[1] = rstd;
      for (int p = 0; p < pixels; ++p)
        for (int c = c0; c < c0 + per_group; ++c) {
          const std::size_t i = first + static_cast<std::size_t>(p) * channels + c;
          y[i] = gamma[c] * ((z[i] - m) * rstd) + beta[c];
        }
    }
  }
}

void GroupNorm::backward(std::span<const float> params, const float* z, const float* stats, int n,
                         const float* dy, std::span<float> grad, float* dz) const {
  const int per_group = channels / groups;
  const float* gamma = params.data() + offset;
  float* dgamma = grad.data() + offset;
  float* dbeta = dgamma + channels;
  const double count = static_cast<double>(per_group) * pixels;
  std::fill_n(dgamma, 2 * static_cast<std::size_t>(channels), 0.0f);
  for (int e = 0; e < n; ++e) {
    const std::size_t first = static_cast<std::size_t>(e) * pixels * channels;
    for (int g = 0; g < groups; ++g) {
      const int c0 = g * per_group;
      const float* s = stats + 2 * (static_cast<std::size_t>(e) * groups + g);
      const float m = s[0], rstd = s[1];
      // With xhat = (z - m) rstd and dxhat = gamma dy:
      // dz = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)) over the group.
      double sum_dxhat = 0, sum_dxhat_xhat = 0;
      for (int c = c0; c < c0 + per_group; ++c) {
        double dg = 0, db = 0; // this example's share of dgamma_c and dbeta_c
        for (int p = 0; p < pixels; ++p) {
          const std::size_t i = first + static_cast<std::size_t>(p) * channels + c;
          const auto xhat = static_cast<double>((z[i] - m) * rstd);
          const auto d = static_cast<double>(dy[i]);
          dg += d * xhat;
          db += d;
        }
        dgamma[c] += static_cast<float>(dg);
        dbeta[c] += static_cast<float>(db);
        sum_dxhat += static_cast<double>(gamma[c]) * db;
        sum_dxhat_xhat += static_cast<double>(gamma[c]) * dg;
      }
      const auto mean_dxhat = static_cast<float>(sum_dxhat / count);
      const auto mean_dxhat_xhat = static_cast<float>(sum_dxhat_xhat / count);
      for (int p = 0; p < pixels; ++p)
        for (int c = c0; c < c0 + per_group; ++c) {
          const std::size_t i = first + static_cast<std::size_t>(p) * channels + c;
          const float xhat = (z[i] - m) * rstd;
          dz[i] = rstd * (gamma[c] * dy[i] - mean_dxhat - xhat * mean_dxhat_xhat);
        }
    }
  }
}

} // namespace dtsim

// SPDX-License-Identifier: MIT
// Helpers shared by the models tests: random batches and flat parameter vectors.
#pragma once

#include "models/model.hpp"
#include "sim/core/rng.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace dtsim::testing {

// A batch that owns its storage; view() is the BatchView the models read.
struct OwnedBatch {
  int num_features = 0;
  std::vector<float> features; // column-major num_features x count
  std::vector<std::int32_t> labels;

  int count() const { return static_cast<int>(labels.size()); }
  BatchView view() const { return {features.data(), num_features, count(), labels.data()}; }
  // Example i alone, as a batch of one.
  BatchView example(int i) const {
    return {features.data() + static_cast<std::size_t>(i) * num_features, num_features, 1,
            labels.data() + i};
  }
};

inline OwnedBatch random_batch(int features, int count, int classes, double scale,
                               std::uint64_t seed) {
  Rng rng(seed);
  OwnedBatch b;
  b.num_features = features;
  for (int i = 0; i < features * count; ++i)
    b.features.push_back(static_cast<float>(rng.uniform(-scale, scale)));
  for (int i = 0; i < count; ++i)
    b.labels.push_back(static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(classes))));
  return b;
}

inline std::vector<float> init_params(const Model& m, std::uint64_t seed) {
  std::vector<float> p(m.num_params());
  Rng rng(seed);
  m.init(p, rng);
  return p;
}

// Independent double-precision reference of a dense ReLU stack with a softmax cross-entropy
// head, written from the documented layout (per layer from p[off]: W out x in column-major,
// then b). `a` is one example's input (sizes[0] values); returns its loss, writes its predicted
// class and lowers min_abs_hidden to the smallest |pre-activation| of any hidden unit.
inline double reference_dense_loss(const std::vector<double>& p, std::size_t off,
                                   std::vector<double> a, const std::vector<int>& sizes, int label,
                                   int& predicted, double& min_abs_hidden) {
  for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
    const int in = sizes[l], out = sizes[l + 1];
    std::vector<double> z(static_cast<std::size_t>(out));
    for (int i = 0; i < out; ++i) {
      double s = p[off + static_cast<std::size_t>(out) * static_cast<std::size_t>(in) +
                   static_cast<std::size_t>(i)]; // bias
      for (int j = 0; j < in; ++j)
        s += p[off + static_cast<std::size_t>(j) * static_cast<std::size_t>(out) +
               static_cast<std::size_t>(i)] *
             a[static_cast<std::size_t>(j)]; // W(i, j)
      z[static_cast<std::size_t>(i)] = s;
    }
    off += static_cast<std::size_t>(out) * static_cast<std::size_t>(in + 1);
    if (l + 2 < sizes.size())
      for (double& v : z) {
        min_abs_hidden = std::min(min_abs_hidden, std::fabs(v));
        v = std::max(v, 0.0);
      }
    a = z;
  }
  const double m = *std::max_element(a.begin(), a.end());
  double sum = 0.0;
  for (double v : a)
    sum += std::exp(v - m);
  predicted = static_cast<int>(std::max_element(a.begin(), a.end()) - a.begin());
  return std::log(sum) + m - a[static_cast<std::size_t>(label)];
}

} // namespace dtsim::testing

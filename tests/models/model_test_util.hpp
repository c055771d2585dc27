// SPDX-License-Identifier: MIT
// Helpers shared by the models tests: random batches and flat parameter vectors.
#pragma once

#include "models/model.hpp"
#include "sim/core/rng.hpp"

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

} // namespace dtsim::testing

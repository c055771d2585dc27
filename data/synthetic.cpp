// SPDX-License-Identifier: MIT
// A seeded Gaussian-mixture classification problem, for tests and quick experiments.
#include "data/synthetic.hpp"

#include "sim/core/rng.hpp"

#include <cmath>

namespace dtsim {
namespace {

// Larger than this is surely a typo (2e9 floats = 8 GB), and would overflow int indices.
constexpr double kMaxFloats = 2.0e9;

Dataset draw_split(const Eigen::MatrixXf& means, Eigen::Index n, Rng& rng) {
  const auto classes = static_cast<int>(means.cols());
  Dataset d;
  d.name = "synthetic";
  d.num_classes = classes;
  d.shape = {static_cast<int>(means.rows())};
  d.labels.resize(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < d.labels.size(); ++i)
    d.labels[i] = static_cast<std::int32_t>(i % static_cast<std::size_t>(classes));
  rng.shuffle(d.labels);
  d.features.resize(means.rows(), n);
  for (Eigen::Index j = 0; j < n; ++j) {
    const auto c = d.labels[static_cast<std::size_t>(j)];
    for (Eigen::Index r = 0; r < means.rows(); ++r)
      d.features(r, j) = means(r, c) + static_cast<float>(rng.normal());
  }
  return d;
}

} // namespace

DataSplit make_synthetic(const Params& synthetic, std::uint64_t seed) {
  const auto features = synthetic.integer("features", 20, Range::at_least(1));
  const auto classes = synthetic.integer("classes", 4, Range::at_least(2));
  const auto train = synthetic.integer("train", 2000, Range::at_least(1));
  const auto test = synthetic.integer("test", 500, Range::at_least(1));
  const double separation = synthetic.number("separation", 3.0, Range::positive());
  if (static_cast<double>(features) * static_cast<double>(train + test) > kMaxFloats)
    synthetic.fail("features", "features * (train + test) = " +
                                   format_number(static_cast<double>(features) *
                                                 static_cast<double>(train + test)) +
                                   " floats is more than the limit of 2e9");
  if (static_cast<double>(features) * static_cast<double>(classes) > kMaxFloats)
    synthetic.fail("classes", "features * classes is more than the limit of 2e9 floats");

  Rng rng = Rng::stream(seed, "data-synthetic", Rng::kNoNode);
  Eigen::MatrixXf means(features, classes);
  const double scale = separation / std::sqrt(static_cast<double>(features));
  for (Eigen::Index c = 0; c < means.cols(); ++c)
    for (Eigen::Index r = 0; r < means.rows(); ++r)
      means(r, c) = static_cast<float>(scale * rng.normal());
  DataSplit s;
  s.train = draw_split(means, train, rng);
  s.test = draw_split(means, test, rng);
  return s;
}

} // namespace dtsim

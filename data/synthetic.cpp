// SPDX-License-Identifier: MIT
// A seeded Gaussian-mixture classification problem, for tests and quick experiments.
#include "data/synthetic.hpp"

#include "sim/core/rng.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

namespace dtsim {
namespace {

// Larger than this is surely a typo (2e9 floats = 8 GB), and would overflow int indices.
constexpr double kMaxFloats = 2.0e9;

Dataset draw_split(const Eigen::MatrixXf& means, const std::vector<int>& shape, Eigen::Index n,
                   Rng& rng) {
  const auto classes = static_cast<int>(means.cols());
  Dataset d;
  d.name = "synthetic";
  d.num_classes = classes;
  d.shape = shape;
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

// `image: [C, H, W]` gives the examples an image shape (for the CNNs) of C*H*W values.
std::vector<int> image_shape(const Params& synthetic) {
  const std::vector<double> image = synthetic.numbers("image", {}, Range::between(1, 1 << 16));
  if (image.size() != 3 ||
      std::any_of(image.begin(), image.end(), [](double v) { return v != std::floor(v); }))
    synthetic.fail("image", "expected [channels, height, width], three whole numbers");
  if (image[0] * image[1] * image[2] > kMaxFloats)
    synthetic.fail("image", "more than 2e9 values per example");
  return {image.begin(), image.end()};
}

} // namespace

DataSplit make_synthetic(const Params& synthetic, std::uint64_t seed) {
  const bool image = synthetic.has("image");
  const std::vector<int> image_dims = image ? image_shape(synthetic) : std::vector<int>{};
  const std::int64_t image_values =
      std::accumulate(image_dims.begin(), image_dims.end(), std::int64_t{1}, std::multiplies<>());
  // With an image, `features` defaults to its values (a resolved scenario writes out both).
  const std::int64_t features =
      synthetic.integer("features", image ? image_values : 20, Range::between(1, kMaxFloats));
  if (image && features != image_values)
    synthetic.fail("features", std::to_string(features) + " values disagree with image " +
                                   std::to_string(image_dims[0]) + "x" +
                                   std::to_string(image_dims[1]) + "x" +
                                   std::to_string(image_dims[2]) + " (" +
                                   std::to_string(image_values) + " values); give one of them");
  const std::vector<int> shape = image ? image_dims : std::vector<int>{static_cast<int>(features)};
  const char* size_key = image ? "image" : "features";
  const auto classes = synthetic.integer("classes", 4, Range::at_least(2));
  const auto train = synthetic.integer("train", 2000, Range::at_least(1));
  const auto test = synthetic.integer("test", 500, Range::at_least(1));
  const double separation =
      synthetic.number("separation", 3.0, Range{0.0, 1e6, true, false}); // floats stay finite
  if (static_cast<double>(features) * static_cast<double>(train + test) > kMaxFloats)
    synthetic.fail(size_key, "features * (train + test) = " +
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
  s.train = draw_split(means, shape, train, rng);
  s.test = draw_split(means, shape, test, rng);
  return s;
}

} // namespace dtsim

// SPDX-License-Identifier: MIT
// A seeded Gaussian-mixture classification problem, for tests and quick experiments.
#include "data/synthetic.hpp"

#include "sim/core/rng.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>

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

// `image: [C, H, W]` gives the examples an image shape (for the CNNs), features = C*H*W.
std::vector<int> image_shape(const Params& synthetic, std::optional<std::int64_t> features_given) {
  const std::vector<double> image = synthetic.numbers("image", {}, Range::between(1, 1 << 16));
  if (image.size() != 3 ||
      std::any_of(image.begin(), image.end(), [](double v) { return v != std::floor(v); }))
    synthetic.fail("image", "expected [channels, height, width], three whole numbers");
  const std::vector<int> shape(image.begin(), image.end());
  const std::int64_t features = std::int64_t{shape[0]} * shape[1] * shape[2];
  if (features_given && *features_given != features)
    synthetic.fail("features", "features: " + std::to_string(*features_given) +
                                   " disagrees with image: " + std::to_string(shape[0]) + "x" +
                                   std::to_string(shape[1]) + "x" + std::to_string(shape[2]) +
                                   " (" + std::to_string(features) + " values); give one of them");
  return shape;
}

} // namespace

DataSplit make_synthetic(const Params& synthetic, std::uint64_t seed) {
  const bool features_written = synthetic.has("features"); // before the read writes its default
  const auto features_read = synthetic.integer("features", 20, Range::between(1, kMaxFloats));
  const std::vector<int> shape =
      synthetic.has("image")
          ? image_shape(synthetic, features_written ? std::optional(features_read) : std::nullopt)
          : std::vector<int>{static_cast<int>(features_read)};
  const std::int64_t features =
      std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
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
  s.train = draw_split(means, shape, train, rng);
  s.test = draw_split(means, shape, test, rng);
  return s;
}

} // namespace dtsim

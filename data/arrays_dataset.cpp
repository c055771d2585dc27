// SPDX-License-Identifier: MIT
#include "data/arrays_dataset.hpp"

#include "data/array_file.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

namespace dtsim {
namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

struct Named {
  std::string key;  // train_x, ...
  std::string name; // the array's name in the file
  NumericArray array;
};

Named read(const Params& p, const std::string& file, const char* key, const std::string& name) {
  Named n{key, name, {}};
  try {
    n.array = read_named_array(file, n.name);
  } catch (const std::runtime_error& e) {
    p.fail(key, e.what());
  }
  return n;
}

// Per-example layout: (C, H, W) for images, (F) for flat data.
std::vector<int> example_shape(const Params& p, const Named& x) {
  const auto& s = x.array.shape;
  if (s.size() < 2 || s.size() > 4)
    p.fail(x.key, x.name + " has shape " + shape_text(s) +
                      ", expected (examples, features), (examples, H, W) or (examples, C, H, W)");
  std::vector<int> shape;
  if (s.size() == 3)
    shape.push_back(1);
  for (std::size_t i = 1; i < s.size(); ++i) {
    if (s[i] <= 0 || s[i] > (1 << 24))
      p.fail(x.key, x.name + " has shape " + shape_text(s) + ": dimensions must be in [1, 2^24]");
    shape.push_back(static_cast<int>(s[i]));
  }
  return shape;
}

Dataset build(const Params& p, const std::string& name, Named x, const Named& y, int classes) {
  const std::vector<int> shape = example_shape(p, x); // first: x may have no dimensions at all
  const std::int64_t n = x.array.shape[0];
  const auto& ys = y.array.shape;
  if (!(ys.size() == 1 || (ys.size() == 2 && ys[1] == 1)))
    p.fail(y.key, y.name + " has shape " + shape_text(ys) + ", expected (examples,) of labels");
  if (ys[0] != n)
    p.fail(y.key, y.name + " has " + std::to_string(ys[0]) + " labels but " + x.name + " has " +
                      std::to_string(n) + " examples");
  if (n == 0)
    p.fail(x.key, x.name + " has no examples");
  Dataset d;
  d.name = name;
  d.num_classes = classes;
  d.shape = shape;
  const std::int64_t features = static_cast<std::int64_t>(x.array.values.size()) / n;
  for (std::size_t i = 0; i < x.array.values.size(); ++i)
    if (!std::isfinite(x.array.values[i]))
      p.fail(x.key, x.name + " has a " + (std::isnan(x.array.values[i]) ? "NaN" : "infinite") +
                        " value at example " +
                        std::to_string(static_cast<std::int64_t>(i) / features) + ", feature " +
                        std::to_string(static_cast<std::int64_t>(i) % features));
  // C order puts each example's features together: exactly the columns of a
  // (features x examples) column-major matrix.
  d.features = Eigen::Map<const Eigen::MatrixXf>(x.array.values.data(), features, n);
  x.array.values = {};
  d.labels.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = y.array.values[static_cast<std::size_t>(i)];
    if (!(v >= 0 && v < static_cast<float>(classes) && v == std::floor(v)))
      p.fail(y.key, y.name + "[" + std::to_string(i) +
                        "] = " + format_number(static_cast<double>(v)) +
                        ": expected a whole label in [0, " + std::to_string(classes) + ")");
    d.labels[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(v);
  }
  return d;
}

float largest_label(const Named& y) {
  float m = 0;
  for (float v : y.array.values)
    if (std::isfinite(v))
      m = std::max(m, v);
  return m;
}

} // namespace

DataSplit load_arrays(const Params& p) {
  // Every key is read before the file is opened: a scenario whose file is missing still has
  // its other keys checked, and the schema probes (which have no file) see them all.
  const std::string train_x_name = p.text("train_x", "x_train");
  const std::string train_y_name = p.text("train_y", "y_train");
  const std::string test_x_name = p.text("test_x", "x_test");
  const std::string test_y_name = p.text("test_y", "y_test");
  const auto given = p.integer("classes", 0, Range::between(0, 1 << 20));
  const bool standardize = p.flag("standardize", false);
  const std::string file = p.file_path("file");
  Named train_x = read(p, file, "train_x", train_x_name);
  const Named train_y = read(p, file, "train_y", train_y_name);
  Named test_x = read(p, file, "test_x", test_x_name);
  const Named test_y = read(p, file, "test_y", test_y_name);
  constexpr float kMostClasses = 1 << 20; // as `classes` allows
  for (const Named* y : {&train_y, &test_y})
    if (given == 0 && largest_label(*y) >= kMostClasses)
      p.fail(y->key, y->name + " has a label of " +
                         format_number(static_cast<double>(largest_label(*y))) +
                         ": expected whole labels in [0, " +
                         std::to_string(static_cast<int>(kMostClasses)) + ")");
  const int classes =
      given > 0 ? static_cast<int>(given)
                : static_cast<int>(std::max(largest_label(train_y), largest_label(test_y))) + 1;
  if (classes < 2)
    p.fail("classes", "expected at least 2 classes, got " + std::to_string(classes));

  const std::string name = "arrays:" + std::filesystem::path(file).filename().string();
  DataSplit s{build(p, name, std::move(train_x), train_y, classes),
              build(p, name, std::move(test_x), test_y, classes)};
  if (s.train.shape != s.test.shape)
    p.fail("test_x", "test examples have another shape than training examples (" +
                         std::to_string(s.test.num_features()) + " vs " +
                         std::to_string(s.train.num_features()) + " values)");
  if (standardize) {
    const Eigen::VectorXf mean = s.train.features.rowwise().mean();
    Eigen::VectorXf std =
        ((s.train.features.colwise() - mean).array().square().rowwise().mean()).sqrt();
    std = (std.array() > 1e-12f).select(std, 1.0f); // a constant feature is only centred
    for (Dataset* d : {&s.train, &s.test})
      d->features = (d->features.colwise() - mean).array().colwise() / std.array();
  }
  return s;
}

} // namespace dtsim

// SPDX-License-Identifier: MIT
// load_dataset: real Fashion-MNIST, the synthetic mixture, subsets and key ownership.
#include "data/load_dataset.hpp"
#include "test_params.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <filesystem>

using namespace dtsim;
using dtsim::test::config_error_of;
using dtsim::test::map_of;
using dtsim::test::params_of;

namespace {

// Fraction of test examples whose nearest training-class mean has their label: the accuracy
// of a linear classifier close to the Bayes one for an equal-covariance mixture.
double nearest_mean_accuracy(const DataSplit& s) {
  const int k = s.train.num_classes;
  Eigen::MatrixXf means = Eigen::MatrixXf::Zero(s.train.num_features(), k);
  Eigen::VectorXf counts = Eigen::VectorXf::Zero(k);
  for (std::size_t i = 0; i < s.train.size(); ++i) {
    means.col(s.train.labels[i]) += s.train.features.col(static_cast<Eigen::Index>(i));
    counts(s.train.labels[i]) += 1.0F;
  }
  for (int c = 0; c < k; ++c)
    means.col(c) /= counts(c);
  std::size_t right = 0;
  for (std::size_t i = 0; i < s.test.size(); ++i) {
    Eigen::Index best = 0;
    (means.colwise() - s.test.features.col(static_cast<Eigen::Index>(i)))
        .colwise()
        .squaredNorm()
        .minCoeff(&best);
    right += best == s.test.labels[i];
  }
  return static_cast<double>(right) / static_cast<double>(s.test.size());
}

bool labels_in_range(const Dataset& d) {
  return std::all_of(d.labels.begin(), d.labels.end(),
                     [&](std::int32_t y) { return y >= 0 && y < d.num_classes; });
}

} // namespace

TEST_SUITE("data") {
  TEST_CASE("FashionMnist: the Debian package's files load completely and standardised") {
    const std::string dir = "/usr/share/datasets/fashion-mnist";
    REQUIRE_MESSAGE(std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz"),
                    "install the Debian package dataset-fashion-mnist");
    const DataSplit s = *load_dataset(params_of({}), 1);
    CHECK(s.train.name == "fashion-mnist");
    CHECK(s.train.size() == 60000);
    CHECK(s.test.size() == 10000);
    CHECK(s.train.num_features() == 784);
    CHECK(s.train.features.cols() == 60000);
    CHECK(s.test.features.cols() == 10000);
    CHECK(s.train.shape == std::vector<int>{1, 28, 28});
    CHECK(s.train.num_classes == 10);
    CHECK(labels_in_range(s.train));
    CHECK(labels_in_range(s.test));
    std::vector<int> counts(10, 0);
    for (auto y : s.train.labels)
      ++counts[static_cast<std::size_t>(y)];
    CHECK(counts == std::vector<int>(10, 6000));
    // Standardised with the training statistics: mean ~0, std ~1, range [-0.81, 2.02].
    const double mean = s.train.features.cast<double>().mean();
    const double sq = s.train.features.cast<double>().array().square().mean();
    CHECK(mean == doctest::Approx(0.0).epsilon(0.01));
    CHECK(std::sqrt(sq - mean * mean) == doctest::Approx(1.0).epsilon(0.01));
    CHECK(s.train.features.minCoeff() == doctest::Approx(-0.2860 / 0.3530));
    CHECK(s.train.features.maxCoeff() == doctest::Approx((1.0 - 0.2860) / 0.3530));
  }

  TEST_CASE("FashionMnist: a missing directory names the file and the Debian package") {
    const Params p = params_of({{"path", "/nonexistent/fmnist"}});
    const std::string msg = config_error_of([&] { load_dataset(p, 1); });
    CHECK(msg == "s.yaml:2: path: /nonexistent/fmnist/train-images-idx3-ubyte.gz not found; "
                 "install the Debian package dataset-fashion-mnist (apt-get install "
                 "dataset-fashion-mnist) or set data.path");
  }

  TEST_CASE("Synthetic: deterministic per seed, different across seeds, learnable") {
    const test::Fields keys = {{"dataset", "synthetic"}};
    const DataSplit a = *load_dataset(params_of(keys), 7);
    const DataSplit b = *load_dataset(params_of(keys), 7);
    const DataSplit c = *load_dataset(params_of(keys), 8);
    CHECK(a.train.size() == 2000);
    CHECK(a.test.size() == 500);
    CHECK(a.train.num_features() == 20);
    CHECK(a.train.shape == std::vector<int>{20});
    CHECK(a.train.num_classes == 4);
    CHECK(labels_in_range(a.train));
    CHECK(labels_in_range(a.test));
    CHECK(a.train.features == b.train.features);
    CHECK(a.train.labels == b.train.labels);
    CHECK(a.test.features == b.test.features);
    CHECK(a.train.features != c.train.features);
    CHECK(a.train.labels != c.train.labels);
    // Learnable but not trivial with the default separation, for several seeds.
    for (std::uint64_t seed : {7, 8, 9, 10}) {
      CAPTURE(seed);
      const double acc = nearest_mean_accuracy(*load_dataset(params_of(keys), seed));
      CHECK(acc > 0.8);
      CHECK(acc < 0.995);
    }
  }

  TEST_CASE("Synthetic: keys under synthetic: set the sizes, absurd sizes are rejected") {
    auto root = std::make_shared<ParamNode>(map_of({{"dataset", "synthetic"}}));
    root->fields.emplace_back("synthetic", map_of({{"features", "5"},
                                                   {"classes", "3"},
                                                   {"train", "30"},
                                                   {"test", "9"},
                                                   {"separation", "1.5"}},
                                                  10));
    const DataSplit s = *load_dataset(Params(root, "s.yaml"), 1);
    CHECK(s.train.size() == 30);
    CHECK(s.test.size() == 9);
    CHECK(s.train.num_features() == 5);
    CHECK(s.test.num_classes == 3);
    // Balanced labels: 10 of each class.
    CHECK(std::count(s.train.labels.begin(), s.train.labels.end(), 2) == 10);

    auto huge = std::make_shared<ParamNode>(map_of({{"dataset", "synthetic"}}));
    huge->fields.emplace_back("synthetic",
                              map_of({{"features", "100000"}, {"train", "100000"}}, 10));
    const std::string msg = config_error_of([&] { load_dataset(Params(huge, "s.yaml"), 1); });
    CHECK(msg.find("s.yaml:10: synthetic.features: features * (train + test)") == 0);
  }

  TEST_CASE("load_dataset: subsets have the asked sizes and are seeded") {
    const test::Fields keys = {
        {"dataset", "synthetic"}, {"train_samples", "100"}, {"test_samples", "50"}};
    const DataSplit a = *load_dataset(params_of(keys), 3);
    const DataSplit b = *load_dataset(params_of(keys), 3);
    CHECK(a.train.size() == 100);
    CHECK(a.train.features.cols() == 100);
    CHECK(a.test.size() == 50);
    CHECK(a.test.features.cols() == 50);
    CHECK(a.train.labels == b.train.labels);
    CHECK(a.train.features == b.train.features);

    // The subset is made of examples of the full set, with their own labels.
    const DataSplit full = *load_dataset(params_of({{"dataset", "synthetic"}}), 3);
    int found = 0;
    for (Eigen::Index j = 0; j < 100; ++j)
      for (Eigen::Index i = 0; i < full.train.features.cols(); ++i)
        if (full.train.features.col(i) == a.train.features.col(j)) {
          found += full.train.labels[static_cast<std::size_t>(i)] ==
                   a.train.labels[static_cast<std::size_t>(j)];
          break;
        }
    CHECK(found == 100);

    const std::string msg = config_error_of([] {
      load_dataset(params_of({{"dataset", "synthetic"}, {"train_samples", "2001"}}), 1);
    });
    CHECK(msg.find("s.yaml:3: train_samples: expected at most 2000") == 0);
  }

  TEST_CASE("load_dataset: leaves partition and batch_size unread, rejects unknown datasets") {
    auto root =
        std::make_shared<ParamNode>(map_of({{"dataset", "synthetic"}, {"batch_size", "32"}}));
    root->fields.emplace_back("partition", map_of({{"kind", "dirichlet"}}, 10));
    const Params data(root, "s.yaml");
    load_dataset(data, 1);
    CHECK_FALSE(root->find("batch_size")->used);
    CHECK_FALSE(root->find("partition")->used);
    CHECK(root->find("path") == nullptr); // fashion-mnist's key is not filled in for synthetic
    CHECK(root->find("train_samples")->used);

    const std::string msg = config_error_of([] {
      load_dataset(params_of({{"dataset", "fashion_mnist"}}), 1);
    });
    CHECK(msg.find("did you mean 'fashion-mnist'") != std::string::npos);
  }

  TEST_CASE("load_dataset: the dataset kinds are listed with help") {
    const auto kinds = dataset_kinds();
    REQUIRE(kinds.size() == 5);
    CHECK(kinds[0].first == "fashion-mnist");
    CHECK(kinds[1].first == "synthetic");
    CHECK(kinds[2].first == "cifar10");
    CHECK(kinds[3].first == "cifar100");
    CHECK(kinds[4].first == "arrays");
    for (const auto& [name, help] : kinds)
      CHECK_FALSE(help.empty());
  }
}

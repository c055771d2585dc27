// SPDX-License-Identifier: MIT
// Builds the train/test data a scenario names (the `data:` section's dataset keys).
#include "data/load_dataset.hpp"

#include "data/arrays_dataset.hpp"
#include "data/cifar.hpp"
#include "data/fashion_mnist.hpp"
#include "data/synthetic.hpp"
#include "sim/core/rng.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <mutex>
#include <numeric>

namespace dtsim {
namespace {

// The first `k` examples of a shuffle of `source` drawn from `rng`, in their original order;
// k == 0 keeps everything (and draws nothing). Copies only what is kept.
Dataset take_subset(const Params& data, const char* key, std::int64_t k, const Dataset& source,
                    Rng rng) {
  if (k == 0)
    return source;
  if (static_cast<std::size_t>(k) > source.size())
    data.fail(key, "expected at most " + std::to_string(source.size()) + " (the size of the " +
                       source.name + " set) or 0 for all, got " + std::to_string(k));
  std::vector<std::uint32_t> order(source.size());
  std::iota(order.begin(), order.end(), 0U);
  rng.shuffle(order);
  order.resize(static_cast<std::size_t>(k));
  std::sort(order.begin(), order.end());
  Dataset d;
  d.name = source.name;
  d.num_classes = source.num_classes;
  d.shape = source.shape;
  d.features.resize(source.features.rows(), k);
  d.labels.resize(order.size());
  for (std::size_t j = 0; j < order.size(); ++j) {
    d.features.col(static_cast<Eigen::Index>(j)) = source.features.col(order[j]);
    d.labels[j] = source.labels[order[j]];
  }
  return d;
}

} // namespace

std::shared_ptr<const DataSplit> load_dataset(const Params& data, std::uint64_t seed) {
  std::vector<std::string> kinds;
  for (const auto& [name, help] : dataset_kinds())
    kinds.push_back(name);
  const std::string kind = data.choice("dataset", "fashion-mnist", kinds);
  const auto train_samples = data.integer("train_samples", 0, Range::non_negative());
  const auto test_samples = data.integer("test_samples", 0, Range::non_negative());

  DataSplit s;
  // Keys of the other dataset are left unread, so that a stray one is reported as unused.
  if (kind == "fashion-mnist") {
    const std::string path = data.file_path("path", "/usr/share/datasets/fashion-mnist");
    const std::shared_ptr<const DataSplit> shared = load_fashion_mnist(path, data.where("path"));
    if (train_samples == 0 && test_samples == 0)
      return shared;
    // Subsets straight from the shared, decoded data (no copy of the whole set), and the
    // last few kept: a sweep's points share a handful of (seed, sizes), and checking or
    // running each point would otherwise copy ~100 MB again.
    static std::mutex mutex;
    static std::deque<std::pair<std::string, std::shared_ptr<const DataSplit>>> recent;
    constexpr std::size_t kRecent = 4;
    const std::string key = std::to_string(reinterpret_cast<std::uintptr_t>(shared.get())) + "|" +
                            std::to_string(train_samples) + "|" + std::to_string(test_samples) +
                            "|" + std::to_string(seed);
    const std::lock_guard lock(mutex);
    for (const auto& [k, split] : recent)
      if (k == key)
        return split;
    auto split = std::make_shared<const DataSplit>(
        DataSplit{take_subset(data, "train_samples", train_samples, shared->train,
                              Rng::stream(seed, "data-subset", 0)),
                  take_subset(data, "test_samples", test_samples, shared->test,
                              Rng::stream(seed, "data-subset", 1))});
    recent.emplace_front(key, split);
    if (recent.size() > kRecent)
      recent.pop_back();
    return split;
  } else if (kind == "cifar10" || kind == "cifar100") {
    // Read before the directory is checked, so that the schema probes (without one) see it.
    const bool fine =
        kind == "cifar100" && data.choice("labels", "fine", {"fine", "coarse"}) == "fine";
    // No standard location: the directory must be given.
    if (!data.has("path"))
      data.fail("path",
                "expected the directory of the " +
                    std::string(kind == "cifar10" ? "CIFAR-10 binary files (data_batch_1.bin "
                                                    "... data_batch_5.bin, test_batch.bin)"
                                                  : "CIFAR-100 binary files (train.bin, "
                                                    "test.bin)"));
    const std::string path = data.file_path("path");
    if (kind == "cifar10") {
      s = load_cifar10(path, data.where("path"));
    } else {
      s = load_cifar100(path, fine ? CifarLabels::Fine : CifarLabels::Coarse, data.where("path"));
    }
  } else if (kind == "arrays") {
    s = load_arrays(data.child("arrays"));
  } else {
    s = make_synthetic(data.child("synthetic"), seed);
  }
  // Separate streams: the test subset must not depend on how much training data was kept.
  if (train_samples > 0)
    s.train = take_subset(data, "train_samples", train_samples, s.train,
                          Rng::stream(seed, "data-subset", 0));
  if (test_samples > 0)
    s.test = take_subset(data, "test_samples", test_samples, s.test,
                         Rng::stream(seed, "data-subset", 1));
  return std::make_shared<const DataSplit>(std::move(s));
}

std::vector<std::pair<std::string, std::string>> dataset_kinds() {
  return {
      {"fashion-mnist", "Fashion-MNIST 28x28 grey images, 10 classes, 60000 train / 10000 test "
                        "(Debian package dataset-fashion-mnist)"},
      {"synthetic", "seeded Gaussian mixture, one mean per class (keys under synthetic:)"},
      {"cifar10", "CIFAR-10 32x32 colour images, 10 classes, 50000 train / 10000 test (binary "
                  "version's files in path:)"},
      {"cifar100", "CIFAR-100 32x32 colour images, 100 fine classes (labels: fine) or 20 coarse "
                   "(labels: coarse), 50000 train / 10000 test (binary version's files in path:)"},
      {"arrays", "your own arrays from a .npz, an HDF5 file or a folder of .npy files "
                 "(keys under arrays:), any feature and class count"},
  };
}

} // namespace dtsim

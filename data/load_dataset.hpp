// SPDX-License-Identifier: MIT
// Builds the train/test data a scenario names (the `data:` section's dataset keys).
#pragma once

#include "data/dataset.hpp"
#include "sim/core/params.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

// Keys of the `data:` section read here (every one has a default):
//   dataset: fashion-mnist      # fashion-mnist | synthetic | cifar10 | cifar100 | arrays
//   path: /usr/share/datasets/fashion-mnist   # fashion-mnist: directory of the four
//                               #   IDX .gz files (Debian package dataset-fashion-mnist);
//                               #   cifar10 / cifar100 (required): directory of the binary
//                               #   version's files (data_batch_1..5.bin + test_batch.bin;
//                               #   train.bin + test.bin)
//   labels: fine                # cifar100 only: fine (100 classes) | coarse (20)
//   train_samples: 0            # integer >= 0; 0 = the whole training set, k = the first k
//   test_samples: 0             #   examples of a seeded shuffle (stream "data-subset",
//                               #   index 0 for train, 1 for test), kept in file order
//   synthetic:                  # synthetic only: a seeded Gaussian mixture, one mean per class
//     features: 20              # integer >= 1
//     classes: 4                # integer >= 2
//     train: 2000               # training examples, integer >= 1
//     test: 500                 # test examples, integer >= 1
//     separation: 3.0           # > 0; class means are separation * N(0, I) / sqrt(features),
//                               #   noise is N(0, I); 3.0 lets a linear model reach about
//                               #   87-98% test accuracy (93% on average over seeds)
//   arrays:                     # arrays only: your own arrays (arrays_dataset.hpp)
// The other keys of `data:` (partition, batch_size) belong to other components and are left
// unread here.

// Reads from `data`: dataset, path, labels (cifar100), train_samples, test_samples (0 = all)
// and, for synthetic and arrays, their sections. Subsets are the first examples of a
// seeded shuffle. Throws ConfigError on bad keys or missing files (naming the Debian package).
// The whole Fashion-MNIST set is shared, not copied: planning a run costs no 220 MB copy.
std::shared_ptr<const DataSplit> load_dataset(const Params& data, std::uint64_t seed);

// The dataset names `dataset:` accepts, each with a one-line description (for `dtsim list`).
std::vector<std::pair<std::string, std::string>> dataset_kinds();

} // namespace dtsim

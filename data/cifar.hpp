// SPDX-License-Identifier: MIT
// CIFAR-10 and CIFAR-100 (Krizhevsky 2009) from the binary version's files.
#pragma once

#include "data/dataset.hpp"

#include <string>

namespace dtsim {

// Which of CIFAR-100's two labels becomes the class: 100 fine classes or 20 superclasses.
enum class CifarLabels { Fine, Coarse };

// The binary version of CIFAR-10 (cifar-10-binary.tar.gz): data_batch_1.bin ...
// data_batch_5.bin (training, in that order) and test_batch.bin in `dir`, each a sequence of
// records of 1 label byte and 3072 pixel bytes (the red, green and blue 32x32 planes, rows
// top to bottom). Any number of records per file is accepted (tests write tiny files).
// Pixels are scaled to [0, 1] and standardised per channel with the training set's mean and
// standard deviation: CIFAR-10 mean (0.4914, 0.4822, 0.4465), std (0.2470, 0.2435, 0.2616).
// shape = {3, 32, 32} (features in that channel-plane order), 10 classes.
// Throws ConfigError "<where>: <what>" naming the file and the expected files when a file is
// missing, has a size that is not a whole number of records, or holds a label out of range.
DataSplit load_cifar10(const std::string& dir, const std::string& where);

// The binary version of CIFAR-100 (cifar-100-binary.tar.gz): train.bin and test.bin in `dir`,
// records of a coarse label byte, a fine label byte and 3072 pixel bytes. Standardised with
// CIFAR-100's mean (0.5071, 0.4865, 0.4409) and std (0.2673, 0.2564, 0.2762); 100 classes
// (fine) or 20 (coarse). Errors as load_cifar10.
DataSplit load_cifar100(const std::string& dir, CifarLabels labels, const std::string& where);

} // namespace dtsim

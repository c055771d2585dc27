// SPDX-License-Identifier: MIT
// Fashion-MNIST (Xiao et al., arXiv:1708.07747) from the Debian package's IDX files.
#pragma once

#include "data/dataset.hpp"

#include <memory>
#include <string>

namespace dtsim {

// Loads the 60000 training and 10000 test images of `dir` (the four *-ubyte.gz files),
// scaled to [0, 1] and then standardised with the training set's mean and standard deviation.
// shape = {1, 28, 28}, 10 classes. Throws ConfigError naming `where` and the file, with the
// Debian package to install when a file is missing.
// Decoded once per process and shared read-only (a sweep plans hundreds of runs on it).
std::shared_ptr<const DataSplit> load_fashion_mnist(const std::string& dir,
                                                    const std::string& where);

} // namespace dtsim

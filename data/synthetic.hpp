// SPDX-License-Identifier: MIT
// A seeded Gaussian-mixture classification problem, for tests and quick experiments.
#pragma once

#include "data/dataset.hpp"
#include "sim/core/params.hpp"

#include <cstdint>

namespace dtsim {

// Reads `synthetic:` (features, classes, train, test, separation; see load_dataset.hpp) and
// draws, from the stream ("data-synthetic", no node): one mean per class,
// separation * N(0, I) / sqrt(features), then balanced labels in random order and examples
// mean[label] + N(0, I). Equal covariances make the Bayes classifier linear, so a softmax
// model can approach, but not reach, 100% when the means are a few noise widths apart.
// ensures: the same (keys, seed) give bitwise the same data; shape = {features}.
DataSplit make_synthetic(const Params& synthetic, std::uint64_t seed);

} // namespace dtsim

// SPDX-License-Identifier: MIT
// Builds the train/test data a scenario names (the `data:` section's dataset keys).
#pragma once

#include "data/dataset.hpp"
#include "sim/core/params.hpp"

#include <cstdint>

namespace dtsim {

// Reads from `data`: dataset (fashion-mnist | synthetic), path, train_samples, test_samples
// (0 = all) and, for synthetic, its generator keys. Subsets are the first examples of a
// seeded shuffle. Throws ConfigError on bad keys or missing files (naming the Debian package).
DataSplit load_dataset(const Params& data, std::uint64_t seed);

} // namespace dtsim

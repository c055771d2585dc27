// SPDX-License-Identifier: MIT
// An out-of-tree algorithm: asynchronous random-push gossip, in about 70 lines, which also
// keeps its vectors on a resident backend (docs/extending.md).
#pragma once

#include "sim/optimizers/algorithm_setup.hpp"

#include <memory>

// After each local SGD step a node sends its model to one neighbour drawn at random and
// starts its next gradient at once; before each step's update it averages in the models it
// received meanwhile: x <- (x + mean of received) / 2. Keys: lr (default 0.05).
std::unique_ptr<dtsim::Algorithm> make_random_push_gossip(const dtsim::Params& p,
                                                          const dtsim::AlgorithmSetup& setup);

// SPDX-License-Identifier: MIT
// An out-of-tree model: one tanh hidden layer and a softmax output, written with Eigen.
#pragma once

#include "models/make_model.hpp"

#include <memory>

// features -> hidden (tanh) -> classes, mean cross-entropy. Keys: hidden (default 64).
std::unique_ptr<dtsim::Model> make_tanh_mlp(const dtsim::Params& p, const dtsim::ModelSetup& setup);

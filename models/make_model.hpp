// SPDX-License-Identifier: MIT
// Builds the model a scenario's `model:` section names.
#pragma once

#include "models/model.hpp"
#include "sim/core/params.hpp"

#include <memory>
#include <vector>

namespace dtsim {

// Reads `model:` (kind: softmax | mlp | lenet | cnn and their keys) for inputs of `input_shape` and
// `num_classes` outputs. Throws ConfigError for unknown kinds or bad sizes.
std::unique_ptr<Model> make_model(const Params& model, const std::vector<int>& input_shape,
                                  int num_classes);

// Names and one-line help of the model kinds, for `dtsim list`.
std::vector<std::pair<std::string, std::string>> model_kinds();

} // namespace dtsim

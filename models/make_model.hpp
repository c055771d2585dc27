// SPDX-License-Identifier: MIT
// Builds the model a scenario's `model:` section names.
#pragma once

#include "models/model.hpp"
#include "sim/core/params.hpp"
#include "sim/core/registry.hpp"

#include <memory>
#include <vector>

namespace dtsim {

// Reads `model:` (kind: softmax | mlp | lenet | cnn and their keys) for inputs of `input_shape` and
// `num_classes` outputs. Throws ConfigError for unknown kinds or bad sizes.
std::unique_ptr<Model> make_model(const Params& model, const std::vector<int>& input_shape,
                                  int num_classes);

// What a model factory is given besides its keys: the per-example input layout ({features}
// or {channels, height, width}) and the number of classes.
struct ModelSetup {
  std::vector<int> input_shape;
  int num_classes = 0;
};

using ModelRegistry = Registry<std::unique_ptr<Model>, const ModelSetup&>;

// Model kinds a program adds with model_registry().add(name, help, factory) before planning
// runs (docs/extending.md); `model.kind` names them beside the built-ins. Process-wide.
ModelRegistry& model_registry();

// Names and one-line help of the model kinds (built-in, then added), for `dtsim list`.
std::vector<std::pair<std::string, std::string>> model_kinds();

} // namespace dtsim

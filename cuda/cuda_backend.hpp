// SPDX-License-Identifier: MIT
// The CUDA gradient backend as the rest of dtsim sees it (model.backend: cuda, cuda-batched,
// cuda-resident).
#pragma once

#include "cuda/conv_batch_math.hpp"
#include "cuda/resident_fit.hpp"
#include "data/dataset.hpp"
#include "models/cnn.hpp"
#include "models/mlp.hpp"
#include "models/resnet.hpp"
#include "sim/engine/batched_gradients.hpp"

#include <memory>
#include <string>
#include <vector>

namespace dtsim::cuda {

// Whether this build has the backend (CMake option DTSIM_CUDA).
bool built_with_cuda();
// Empty when `backend: cuda` can run here; else why not, in one line: a build without
// CUDA, or "no CUDA device found (...)".
std::string unavailable_reason();

// The models the backend runs: softmax and MLP (models::Mlp), LeNet and CNN (models::Cnn)
// with kernels up to kMaxConvKernel, and ResNet (models::ResNet); a model from an extension
// may not. Known in every build, so that a scenario can be validated without CUDA.
inline bool runs_model(const Model& model) {
  if (const auto* cnn = dynamic_cast<const Cnn*>(&model))
    return cnn->convs().front().kernel <= kMaxConvKernel;
  return dynamic_cast<const Mlp*>(&model) != nullptr ||
         dynamic_cast<const ResNet*>(&model) != nullptr;
}

// An Mlp's widths: inputs, hidden widths..., classes.
inline std::vector<int> mlp_widths(const Mlp& model) {
  std::vector<int> w{model.layers().front().in};
  for (const DenseLayer& layer : model.layers())
    w.push_back(layer.out);
  return w;
}

// Gradients of a batch of nodes on the device (cuda/device_gradients.hpp) for a model that
// runs_model(). The training set is copied to the device here. Throws std::runtime_error
// when the backend is unavailable or a CUDA call fails.
// With resident.nodes > 0 (backends cuda and cuda-resident) the device can also keep that many
// nodes' models, momenta and messages (ResidentVectors) for an algorithm that attaches to it,
// about resident.vectors_per_node vectors of P floats each: a run they do not fit is refused
// when resident.required (cuda-resident), else keeps them on the host (cuda: resident() is
// then null and describe() says cuda-batched).
std::unique_ptr<BatchedGradients> make_gradients(const Model& model, const Dataset& train,
                                                 int batch_size, ResidentSize resident = {});

} // namespace dtsim::cuda

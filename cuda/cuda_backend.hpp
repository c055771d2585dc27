// SPDX-License-Identifier: MIT
// The CUDA gradient backend as the rest of dtsim sees it (model.backend: cuda).
#pragma once

#include "data/dataset.hpp"
#include "models/mlp.hpp"
#include "sim/engine/batched_gradients.hpp"

#include <memory>
#include <string>

namespace dtsim::cuda {

// Whether this build has the backend (CMake option DTSIM_CUDA).
bool built_with_cuda();
// Empty when `backend: cuda` can run here; else why not, in one line: a build without
// CUDA, or "no CUDA device found (...)".
std::string unavailable_reason();
// Softmax and MLP gradients of a batch of nodes on the device (cuda/device_mlp.hpp). The
// training set is copied to the device here. Throws std::runtime_error when the backend is
// unavailable or a CUDA call fails.
std::unique_ptr<BatchedGradients> make_mlp_gradients(const Mlp& model, const Dataset& train,
                                                     int batch_size);

} // namespace dtsim::cuda

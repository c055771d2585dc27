// SPDX-License-Identifier: MIT
// model.backend: where a run's gradients are computed.
#pragma once

#include "data/dataset.hpp"
#include "models/model.hpp"
#include "sim/core/params.hpp"
#include "sim/engine/batched_gradients.hpp"
#include "sim/engine/example_order.hpp"

#include <memory>

namespace dtsim {

// check: the key and what the backend can run; check_device: also that this machine can
// (a build with CUDA, a device); run: that, and make the backend.
enum class BackendUse { check, check_device, run };

// Reads `backend` from the model section: cpu (one oneTBB task per node, the default),
// cpu-batched (the batched executor on the CPU: the GPU backend's reference, same results
// as cpu), cpu-resident (cpu-batched keeping the models, momenta and messages itself: the
// reference of a resident device backend, same results again), cuda-batched (batches on a
// GPU, the vectors on the host), cuda-resident (batches on a GPU keeping the vectors there)
// or cuda (cuda-resident where the vectors fit the device, else cuda-batched). Returns the
// batched backend for BackendUse::run, else null. Refuses with ConfigError naming the key: a
// model or example order the backend cannot run and, unless only checking, a build without
// CUDA or a machine without a usable device. resident_vectors: about how many vectors of P
// floats per node the algorithm will keep in a resident backend
// (Algorithm::resident_vectors_per_node; 0 where it cannot attach): only then do cuda and
// cuda-resident set device memory aside for them, and cuda-resident refuses a run they do not
// fit.
std::unique_ptr<BatchedGradients> make_gradient_backend(const Params& model_section,
                                                        const Model& model, const Dataset& train,
                                                        int batch_size, int nodes,
                                                        const ExampleOrder& order, BackendUse use,
                                                        std::size_t resident_vectors = 0);

} // namespace dtsim
